"""Every run's HPL result row, residual and GPU power during HPL_pdgesv (nvidia-smi samples between HPL's printed
start and end times, per GPU), from the runs/ folders here: python3 summarize.py > summary.txt"""

import csv
import datetime
import glob
import re

FMT = "%a %b %d %H:%M:%S %Y"
for d in sorted(glob.glob("*/runs/*")):
    out = open(d + "/HPL.out").read()
    start = re.search(r"HPL_pdgesv\(\) start time (.*)", out)
    end = re.search(r"HPL_pdgesv\(\) end time +(.*)", out)
    row = re.search(r"^(W\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.e+]+)", out, re.M)
    res = re.search(r"=\s+([\d.e+-]+) \.+ (PASSED|FAILED)", out)
    if not (start and end and row):
        print(d, "no result row")
        continue
    t1 = datetime.datetime.strptime(start.group(1).strip(), FMT)
    t2 = datetime.datetime.strptime(end.group(1).strip(), FMT)
    power = {}
    with open(d + "/nvidia-smi.csv") as handle:
        for r in csv.reader(handle):
            if r[0].startswith("timestamp"):
                continue
            t = datetime.datetime.strptime(r[0].strip().split(".")[0], "%Y/%m/%d %H:%M:%S")
            if t1 <= t <= t2:
                power.setdefault(r[1].strip(), []).append(float(r[2].split()[0]))
    watts = " ".join(f"gpu{k} {sum(v) / len(v):.0f} W ({len(v)} samples)" for k, v in sorted(power.items()))
    check = f"{res.group(1)} {res.group(2)}" if res else "no check (threshold -1)"
    print(f"{d}: {row.group(1)} N={row.group(2)} NB={row.group(3)} P x Q={row.group(4)} x {row.group(5)} "
          f"{row.group(6)} s {float(row.group(7)) / 1e3:.2f} TFLOP/s; residual {check}; {watts}")
