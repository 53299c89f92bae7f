"""Power during each default run, from the nvidia-smi samples beside it (100 ms, taken alongside because the
power sampler of issue 4 was not on this branch yet): busy = samples above 300 W; energy = sum of P*dt.
Usage: python3 power_from_smi.py > power_summary.txt"""
import csv
import datetime
import json

for i in range(1, 6):
    rows = list(csv.reader(open(f"default{i}.smi.csv")))
    t = [datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp() for r in rows]
    p = [float(r[1].split()[0]) for r in rows]
    clk = [float(r[2].split()[0]) for r in rows]
    busy = [k for k in range(len(p)) if p[k] > 300]
    k0, k1 = busy[0], busy[-1]
    energy = sum(p[k] * (t[k + 1] - t[k]) for k in range(k0, k1))
    dur = t[k1] - t[k0]
    run = json.load(open(f"default{i}.json"))["results"]["per_gpu"][0]["runs"][0]
    print(f"default{i}: busy {dur:.1f} s (timed LU+solve {run['seconds']:.2f} s), avg {energy / dur:.0f} W, "
          f"peak {max(p):.0f} W, energy {energy / 1e3:.2f} kJ, SM clock {min(clk[k0:k1]):.0f}-{max(clk[k0:k1]):.0f} MHz, "
          f"{run['gflops'] / (energy / dur):.1f} GFLOP/s per W")
