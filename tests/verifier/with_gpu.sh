#!/bin/sh
# Runs kvverify with the given arguments where a GPU is usable; elsewhere the test is skipped (77).
kvverify=$1
shift
if ! "$kvverify" --probe-gpu; then
  exit 77
fi
exec "$kvverify" "$@"
