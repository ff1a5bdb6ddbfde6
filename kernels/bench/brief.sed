# One short line per shape of bench_decode.py's output (ab.sh, variants.sh, ablate.sh):
# name, context, plan, our FP8 and BF16 kernels' times. Other lines are dropped.
/^[a-z0-9_]+ +B= *[0-9]+ +H= *[0-9]+ +ctx=/!d
s/^([a-z0-9_]+) +B= *([0-9]+) +H= *([0-9]+) +ctx=([0-9]+) +plan=(.*) fp8= *([0-9.]+)us.* bf16= *([0-9.]+)us.*$/\1 B=\2 H=\3 ctx=\4 plan=\5 fp8=\6us bf16=\7us/
t
s/^([a-z0-9_]+) +B= *([0-9]+) +H= *([0-9]+) +ctx=([0-9]+) +plan=(.*) fp8= *([0-9.]+)us.*$/\1 B=\2 H=\3 ctx=\4 plan=\5 fp8=\6us/
