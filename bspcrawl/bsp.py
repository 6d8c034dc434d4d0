"""The BSP collectives of a superstep, comm first: wait, sync, announce hosts, exchange.

Marin et al. (2008) end every superstep with a barrier at which the messages sent are
delivered. Here that is at most three non-blocking collectives, each working on any
communicator (``MPI.COMM_SELF`` included): :func:`sync` always (one ``Ialltoall`` of the
bytes each rank sends each, the hosts found and the counters, so every rank takes the same
decisions from the same sums); :func:`announce` only when some rank found new hosts or
budget news (one ``Iallgatherv``); :func:`exchange` only when links travel (one
``Ialltoallv`` of byte buffers). Collectives that carry nothing are skipped.

Only the main thread calls MPI, and :func:`wait` polls with ``Test`` and growing sleeps:
MPICH busy-polls inside blocking collectives, which starves the fetch workers and the
other ranks when ranks share cores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

POLL_MIN, POLL_MAX = 20e-6, 1e-3  # backoff between Test() calls on a pending collective, s


def wait(requests: list[MPI.Request]) -> None:
    """Wait for non-blocking requests without MPICH's busy polling: collectives progress
    only inside Test(), so polling starts fast and backs off to ``POLL_MAX`` sleeps."""
    delay = 0.0
    while not MPI.Request.Testall(requests):
        time.sleep(delay)
        delay = min(POLL_MAX, delay * 2 or POLL_MIN)


def node_size(comm: MPI.Comm) -> int:
    """How many ranks of ``comm`` run on this machine (this one included); collective."""
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_size()
    finally:
        node.Free()


def barrier(comm: MPI.Comm) -> None:
    """A barrier that does not busy-poll (``Ibarrier`` + :func:`wait`)."""
    wait([comm.Ibarrier()])


@dataclass(slots=True)
class Synced:
    """What :func:`sync` tells a rank: bytes and new hosts from each rank, whether any rank
    sends links, and the counters summed over every rank."""

    recv_counts: np.ndarray
    found: np.ndarray
    any_sent: bool
    totals: np.ndarray


def sync(comm: MPI.Comm, send_counts: np.ndarray, new_hosts: int,
         counters: np.ndarray) -> Synced:
    """The superstep's sync: one ``Ialltoall`` of (bytes for each rank, bytes sent in all,
    new hosts found, counters...) from every rank to every rank."""
    size = comm.Get_size()
    send = np.empty((size, 3 + counters.size), dtype=np.int64)
    send[:, 0] = send_counts
    send[:, 1], send[:, 2], send[:, 3:] = send_counts.sum(), new_hosts, counters
    recv = np.empty_like(send)
    wait([comm.Ialltoall(send, recv)])
    return Synced(recv[:, 0].copy(), recv[:, 2].copy(), bool(recv[:, 1].any()),
                  recv[:, 3:].sum(axis=0))


def announce(comm: MPI.Comm, new_hosts: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Every rank's ``new_hosts`` (int64 values: the loop sends host and domain hashes), in
    rank order; ``found`` is each rank's count of values (from :func:`sync`). No
    collective when no rank found any."""
    hosts = np.empty(int(found.sum()), dtype=np.int64)
    if len(hosts):
        displ = np.concatenate(([0], np.cumsum(found)[:-1]))
        wait([comm.Iallgatherv(new_hosts, [hosts, (found, displ), MPI.INT64_T])])
    return hosts


def exchange(comm: MPI.Comm, buf: np.ndarray, send_counts: np.ndarray,
             recv_counts: np.ndarray) -> np.ndarray:
    """Deliver the byte buffer ``buf`` (``send_counts[r]`` bytes for rank ``r``, in rank
    order); returns what every rank sent this one, in rank order (``recv_counts``)."""
    rbuf = np.empty(int(recv_counts.sum()), dtype=np.uint8)
    sdispl = np.concatenate(([0], np.cumsum(send_counts)[:-1]))
    rdispl = np.concatenate(([0], np.cumsum(recv_counts)[:-1]))
    wait([comm.Ialltoallv([buf, (send_counts, sdispl), MPI.BYTE],
                          [rbuf, (recv_counts, rdispl), MPI.BYTE])])
    return rbuf
