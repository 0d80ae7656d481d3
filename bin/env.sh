# Shared by bin/rdmastore, bin/test and .ci/run: finds JDK 25 and makes sure UCX is installed.
# shellcheck shell=bash

rdmastore_java_major() {
  "$1" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print v[1]; exit}'
}

# Sets JAVA_HOME to a JDK >= 25: $JAVA_HOME, the java on PATH, then /usr/lib/jvm/*.
rdmastore_find_jdk() {
  local candidate
  for candidate in "${JAVA_HOME:-}" "$(dirname "$(dirname "$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")")")" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
    if [ "$(rdmastore_java_major "$candidate/bin/java")" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  echo "rdmastore: needs a JDK 25 or newer (found none in JAVA_HOME, PATH or /usr/lib/jvm); install e.g. temurin-25-jdk" >&2
  return 1
}

# Installs Debian packages when a probe fails and we may (root with apt-get); otherwise says what to run.
#   rdmastore_ensure_pkg <probe command> <package>...
rdmastore_ensure_pkg() {
  local probe="$1"; shift
  if eval "$probe" >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "rdmastore: installing $* (one time)..." >&2
    if ! apt-get install -y -qq "$@" >/dev/null 2>&1; then
      apt-get update -qq >/dev/null 2>&1 || true
      apt-get install -y -qq "$@" >/dev/null 2>&1 || { echo "rdmastore: apt-get install $* failed" >&2; return 1; }
    fi
    return 0
  fi
  echo "rdmastore: missing $* (run: sudo apt-get install $*)" >&2
  return 1
}

rdmastore_ensure_ucx() {
  rdmastore_ensure_pkg "ldconfig -p 2>/dev/null | grep -c 'libucp.so.0 ' >/dev/null" libucx0
}

# JVM flags every rdmastore process needs: FFM without warnings, Netty's Unsafe use without warnings,
# and UCX must not take the JVM's signals.
export UCX_ERROR_SIGNALS=""
RDMASTORE_JVM_FLAGS=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
