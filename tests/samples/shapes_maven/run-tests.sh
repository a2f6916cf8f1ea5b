#!/bin/sh
# The suite offline, in Maven's JVM with JaCoCo's agent on it (the pom's forkCount says why), then
# JaCoCo's XML report. A team with Maven Central runs `mvn -B test` with the jacoco-maven-plugin's
# prepare-agent and report goals in its pom instead, and agentledger reads
# target/site/jacoco/jacoco.xml all the same.
mkdir -p target/jacoco
python3 -c 'import zipfile; zipfile.ZipFile("/usr/share/java/org.jacoco.agent.jar").extract("jacocoagent.jar", "target/jacoco")' || exit 1
# The agent records the project's classes only (demo.*), not Maven's own.
MAVEN_OPTS="$MAVEN_OPTS -javaagent:target/jacoco/jacocoagent.jar=destfile=target/jacoco.exec,includes=demo.*" \
  mvn -B -q -s offline-settings.xml -Dmaven.repo.local=target/m2 test
status=$?
ant -q -f jacoco-report.xml || exit 1
exit $status
