#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""
Object import across processes through pyverbs (docs/design/import.md).

rdma-core's own test_shared_pd imports within one process. This runs the
same verbs across two: the owner (this process) opens a context, a PD and
an MR and passes the context's cmd_fd with SCM_RIGHTS to a fresh python
process, the importer, which builds Context(cmd_fd=...), PD(handle=...) and
MR(handle=...), checks the MR's keys, and moves bytes both ways through a
QP on the imported PD: an RDMA WRITE from the owner's MR (lkey) into an MR
of a context of its own, and an RDMA WRITE from that context into the
owner's MR (rkey), which the owner then checks. The owner's device memory
too: DM(context, handle=...) in the importer reads what the owner copied
into it, and the owner reads what the importer copied.

usage: pyverbs_import_xproc.py           (run with LD_LIBRARY_PATH=build/lib)
Exit status 0: pass; 1: fail; 77: pyverbs missing (skip).
"""
import json
import os
import socket
import subprocess
import sys
import time

try:
    from pyverbs.addr import AHAttr
    from pyverbs.cq import CQ
    from pyverbs.device import AllocDmAttr, Context, DM
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, SendWR
    import pyverbs.enums as e
except ImportError as ex:
    print(f'pyverbs_import_xproc: no pyverbs ({ex}): skipped')
    sys.exit(77)

LEN = 4096
DEV = os.environ.get('SRDMA_DEVICE', 'srdma0')
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)


def fail(msg):
    print(f'pyverbs_import_xproc: FAIL: {msg}', flush=True)
    sys.exit(1)


def rc_qp(pd, cq):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1,
                max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def connect(qp, ctx, rqpn):
    lid = ctx.query_port(1).lid
    attr = QPAttr(port_num=1)
    attr.qp_access_flags = ACCESS
    attr.path_mtu = e.IBV_MTU_1024
    attr.max_dest_rd_atomic = 1
    attr.max_rd_atomic = 1
    attr.min_rnr_timer = 1
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.dest_qp_num = rqpn
    attr.ah_attr = AHAttr(port_num=1, dlid=lid)
    qp.to_rts(attr)


def write(qp, cq, laddr, lkey, raddr, rkey, what):
    wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(laddr, LEN, lkey)])
    wr.set_wr_rdma(rkey, raddr)
    qp.post_send(wr)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                fail(f'{what}: status {wcs[0].status}')
            return
    fail(f'{what}: no completion')


def importer(sock):
    msg, fds, _, _ = socket.recv_fds(sock, 4096, 1)
    info = json.loads(msg)
    if len(fds) != 1:
        fail('no fd received')
    ictx = Context(cmd_fd=fds[0])
    ipd = PD(ictx, handle=info['pd'])
    imr = MR(ipd, handle=info['mr'], address=info['addr'])
    if (ipd.handle != info['pd'] or imr.lkey != info['lkey'] or
            imr.rkey != info['rkey'] or imr.handle != info['mr']):
        fail(f'imported objects differ: {ipd.handle} {imr.lkey:#x} '
             f'{imr.rkey:#x} {imr.handle}, owner {info}')
    ctx = Context(name=DEV)
    pd = PD(ctx)
    mr = MR(pd, LEN, ACCESS)
    cq, icq = CQ(ctx, 8), CQ(ictx, 8)
    qp, iqp = rc_qp(pd, cq), rc_qp(ipd, icq)
    connect(iqp, ictx, qp.qp_num)
    connect(qp, ctx, iqp.qp_num)

    write(iqp, icq, info['addr'], imr.lkey, mr.buf, mr.rkey,
          "WRITE from the owner's MR")
    if mr.read(LEN, 0) != b'A' * LEN:
        fail("WRITE from the owner's MR: wrong bytes")
    mr.write(b'w' * LEN, LEN)
    write(qp, cq, mr.buf, mr.lkey, info['addr'], imr.rkey,
          "WRITE with the owner's rkey")
    sock.sendall(b'C')
    if sock.recv(1) != b'y':
        fail("the owner's memory after the WRITE")

    idm = DM(ictx, handle=info['dm'])
    if idm.copy_from_dm(0, LEN) != b'D' * LEN:
        fail("the owner's DM read through the imported DM")
    idm.copy_to_dm(0, b'd' * LEN, LEN)
    sock.sendall(b'M')
    if sock.recv(1) != b'y':
        fail("the owner's DM after the importer's copy")
    idm.unimport()

    for o in (qp, iqp, cq, icq):
        o.close()
    imr.unimport()
    ipd.unimport()
    print('pyverbs_import_xproc: importer: ok', flush=True)


def owner():
    ctx = Context(name=DEV)
    pd = PD(ctx)
    mr = MR(pd, LEN, ACCESS)
    mr.write(b'A' * LEN, LEN)
    dm = DM(ctx, AllocDmAttr(length=LEN))
    dm.copy_to_dm(0, b'D' * LEN, LEN)
    ours, theirs = socket.socketpair()
    child = subprocess.Popen([sys.executable, __file__, 'importer',
                              str(theirs.fileno())],
                             pass_fds=[theirs.fileno()])
    theirs.close()
    info = {'pd': pd.handle, 'mr': mr.handle, 'lkey': mr.lkey,
            'rkey': mr.rkey, 'addr': mr.buf, 'dm': dm.handle}
    socket.send_fds(ours, [json.dumps(info).encode()], [ctx.cmd_fd])
    if ours.recv(1) == b'C':
        ours.sendall(b'y' if mr.read(LEN, 0) == b'w' * LEN else b'n')
    if ours.recv(1) == b'M':
        ours.sendall(b'y' if dm.copy_from_dm(0, LEN) == b'd' * LEN else b'n')
    rc = child.wait(timeout=60)
    if rc:
        fail(f'importer exited with {rc}')
    print('pyverbs_import_xproc: ok', flush=True)


if __name__ == '__main__':
    if os.environ.get('SRDMA_DIR'):
        os.makedirs(os.environ['SRDMA_DIR'], mode=0o700, exist_ok=True)
    if len(sys.argv) == 3 and sys.argv[1] == 'importer':
        importer(socket.socket(fileno=int(sys.argv[2])))
    else:
        owner()
