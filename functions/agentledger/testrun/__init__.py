"""The test run: a build in its own sandbox (CodeBuild on AWS, a subprocess sandbox locally) that
runs the repository's own toolchain on a tarball of its inputs and uploads what it saw."""
