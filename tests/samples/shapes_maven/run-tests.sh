#!/bin/sh
# The suite offline, with JaCoCo's agent on Surefire's JVM, then JaCoCo's XML report.
# A team with Maven Central runs `mvn -B test` with the jacoco-maven-plugin's prepare-agent and
# report goals in its pom instead, and agentledger reads target/site/jacoco/jacoco.xml all the same.
mkdir -p target/jacoco
python3 -c 'import zipfile; zipfile.ZipFile("/usr/share/java/org.jacoco.agent.jar").extract("jacocoagent.jar", "target/jacoco")' || exit 1
mvn -B -q -s offline-settings.xml -Dmaven.repo.local=target/m2 test
status=$?
ant -q -f jacoco-report.xml || exit 1
exit $status
