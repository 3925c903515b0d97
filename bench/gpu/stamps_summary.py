#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises the STAMP lines of a timestamped build (mtp_stamps_apply.py):
per program, the median prologue (Q wait, Q conversion), first tile, key loop and
partials in microseconds, and the loop phases in SM cycles a tile; and the PSTAMP
lines of prefill_stamps_apply.py: per key-tile count, the median of each phase
(sequence and key range, Q, the first K tile, the key loop, the output) and when
the programs start and end. Give it the lines of one grid (the last one
printed):  python3 bench/gpu/stamps_summary.py FILE..."""
import sys, statistics as st
def load(f, tag='STAMP'):
    rows=[]
    for l in open(f):
        if l.startswith(tag + ' '):
            rows.append([int(v) for v in l.split()[1:]])
    return rows
def prefill(name, rows):
    # idx ntiles s0 s1 s2 s3 s4 s5 (globaltimer ns); programs that left early have s5 == 0
    rows=[r for r in rows if r[7] > 0]
    if not rows:
        print(name, 'no finished programs'); return
    t0=min(r[2] for r in rows); us=lambda a, b: (b - a) / 1e3
    ends=sorted(us(t0, r[7]) for r in rows); starts=sorted(us(t0, r[2]) for r in rows)
    print(f"{name}: {len(rows)} programs, start med/max {st.median(starts):.2f}/{starts[-1]:.2f} us, "
          f"end med/p90/max {st.median(ends):.2f}/{ends[int(.9*len(ends))]:.2f}/{ends[-1]:.2f} us")
    for n in sorted(set(r[1] for r in rows)):
        g=[r for r in rows if r[1] == n]
        md=lambda i, j: st.median(us(r[i], r[j]) for r in g if r[i] and r[j])
        first=md(4, 5) if n > 0 else 0.0
        loop=md(5, 6) if n > 0 else 0.0
        print(f"   {n:3d} tiles x{len(g):5d}: seq+range {md(2, 3):.2f} Q {md(3, 4):.2f} first K {first:.2f} "
              f"loop {loop:.2f} ({loop / max(1, n - 1):.2f}/tile) output {md(6, 7):.2f} total {md(2, 7):.2f} us")
for f in sys.argv[1:]:
    if load(f, 'PSTAMP'):
        prefill(f.split('/')[-1], load(f, 'PSTAMP'))
        continue
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
