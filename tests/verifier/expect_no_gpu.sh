#!/bin/sh
# Without a usable GPU, kvverify must exit 3 and say why; with one, this test is skipped (77).
kvverify=$1
if "$kvverify" --probe-gpu >/dev/null 2>&1; then
  echo "a GPU is usable here: the no-GPU exit code cannot be observed"
  exit 77
fi
stderr=$("$kvverify" --preset glm-5 --tp 8 2>&1 >/dev/null)
status=$?
if [ "$status" -ne 3 ]; then
  echo "expected exit 3 without a GPU, got $status: $stderr"
  exit 1
fi
case $stderr in
  *"no usable CUDA GPU"*"--cpu"*) exit 0 ;;
  *) echo "the message does not say that no GPU is usable and that --cpu exists: $stderr"; exit 1 ;;
esac
