"""The TCP port plan: which ports the testbed's flows use, and the (value, mask) blocks that match them.

Three ranges, each one block of the top bits, so that one mask in a switch
rule or a ``tc`` filter tells them apart:

- below :data:`RECEIVER_PORT_MIN`: the iperf3 servers, which send a burst's
  data (bursts run in reverse mode, ``apps/iperf.py``). The ``i``-th job of a
  scenario owns :data:`PORTS_PER_JOB` of them from :func:`job_first_port`,
  one per flow; the pins steer and mark each job's range
  (``controller/forwarding.py``);
- ``[RECEIVER_PORT_MIN, EPHEMERAL_PORT_MIN)``: each receiving client's data
  port, :func:`receiver_port` of its server's port (same low bits). It sends
  no data, so the fabric's priority class (``topo/leafspine.py``) may let its
  small packets pass queued data;
- from :data:`EPHEMERAL_PORT_MIN`: the kernel's ephemeral ports, which
  iperf3's control connections keep; the priority class takes their small
  packets too.

Standard library only: ``topo/leafspine.py`` imports it under ``mn --custom``.
"""

FIRST_SERVER_PORT = 5201  # iperf3's default port: job 0's first server, and the fabric probe's
PORTS_PER_JOB = 10
RECEIVER_PORT_MIN = 16384
EPHEMERAL_PORT_MIN = 32768
PORT_MAX = 65535
PORT_MASK = 0xFFFF  # all 16 bits: one exact port


def job_first_port(index: int) -> int:
    """The first server port of the ``index``-th job (0-based) of a scenario."""
    return FIRST_SERVER_PORT + PORTS_PER_JOB * index


def job_port_range(index: int) -> tuple[int, int]:
    """``(first, last)`` server ports (inclusive) of the ``index``-th job."""
    first = job_first_port(index)
    return first, first + PORTS_PER_JOB - 1


def check_server_port(port: int) -> None:
    """Servers (the senders) listen below the receivers' range: their small segments must stay
    behind their data in the fabric's queues, and only the receivers' go in the priority class."""
    if not 0 < port < RECEIVER_PORT_MIN:
        raise ValueError(f"server port must be in 1..{RECEIVER_PORT_MIN - 1}, got {port}")


def receiver_port(server_port: int) -> int:
    """The client data port that pairs with ``server_port``: same low bits, in the receivers' range."""
    check_server_port(server_port)
    return RECEIVER_PORT_MIN + server_port


def port_range_blocks(first: int, last: int) -> list[tuple[int, int]]:
    """Cover ``first..last`` (inclusive) with the fewest ``(value, mask)`` prefix blocks."""
    blocks = []
    while first <= last:
        size = first & -first if first else 1 << 16
        while size > last - first + 1:
            size //= 2
        blocks.append((first, PORT_MASK & ~(size - 1)))
        first += size
    return blocks


def one_block(first: int, last: int) -> tuple[int, int]:
    """The single ``(value, mask)`` block that is exactly ``first..last``; ValueError if it takes more."""
    blocks = port_range_blocks(first, last)
    if len(blocks) != 1:
        raise ValueError(f"ports {first}..{last} are not one block of the top bits")
    return blocks[0]


RECEIVER_BLOCK = one_block(RECEIVER_PORT_MIN, EPHEMERAL_PORT_MIN - 1)  # (0x4000, 0xc000)
EPHEMERAL_BLOCK = one_block(EPHEMERAL_PORT_MIN, PORT_MAX)  # (0x8000, 0x8000)
