#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises the STAMP lines of a timestamped build (mtp_stamps_apply.py):
per program, the median prologue (Q wait, Q conversion), first tile, key loop and
partials in microseconds, and the loop phases in SM cycles a tile. Give it the
lines of one grid (the last one printed):  python3 bench/gpu/stamps_summary.py FILE..."""
import sys, statistics as st
def load(f):
    rows=[]
    for l in open(f):
        if l.startswith('STAMP'):
            rows.append([int(v) for v in l.split()[1:]])
    return rows
for f in sys.argv[1:]:
    rows=load(f)
    if not rows: print(f,'none'); continue
    t0=min(r[2] for r in rows)
    md=lambda xs: st.median(xs)
    name=f.split('/')[-1]
    if len(rows[0])==13:  # mtp
        n=rows[0][1]
        qwait=md([(r[12]-r[2])/1e3 for r in rows]); conv=md([(r[3]-r[12])/1e3 for r in rows])
        print(f"{name}: tiles {n} Qwait {qwait:.2f} Qconv+sync {conv:.2f} first {md([(r[4]-r[3])/1e3 for r in rows]):.2f} loop {md([(r[5]-r[4])/1e3 for r in rows]):.2f} epi {md([(r[6]-r[5])/1e3 for r in rows]):.2f} end med/max {md([(r[6]-t0)/1e3 for r in rows]):.2f}/{max((r[6]-t0)/1e3 for r in rows):.2f}")
        cyn=['wait_data','wait_pv','B1','conv+B2','math']
        print("   cycles/tile " + " ".join(f"{cyn[k]} {md([r[7+k]/max(1,n) for r in rows]):.0f}" for k in range(5)))
    else:  # decode: idx nt st0 st1 st2 st3 st3 cyw cyt
        starts=[(r[2]-t0)/1e3 for r in rows]; ends=[(r[5]-t0)/1e3 for r in rows]
        print(f"{name}: n={len(rows)} tiles {rows[0][1]} start med/p90/max {md(starts):.2f}/{sorted(starts)[int(.9*len(starts))]:.2f}/{max(starts):.2f} prologue {md([(r[3]-r[2])/1e3 for r in rows]):.2f} loop {md([(r[4]-r[3])/1e3 for r in rows]):.2f} epi {md([(r[5]-r[4])/1e3 for r in rows]):.2f} end med/p90/max {md(ends):.2f}/{sorted(ends)[int(.9*len(ends))]:.2f}/{max(ends):.2f}  waitfrac {md([r[7]/max(1,r[8]) for r in rows]):.2f}")
