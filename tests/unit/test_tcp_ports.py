"""The TCP port plan (topo/tcp_ports.py): its ranges, and the masks derived from them."""

import pytest

from topo import tcp_ports
from topo.tcp_ports import (
    EPHEMERAL_BLOCK,
    RECEIVER_BLOCK,
    job_first_port,
    job_port_range,
    one_block,
    port_range_blocks,
    receiver_port,
)


def ports_of(value, mask):
    return {p for p in range(1, 65536) if p & mask == value}


@pytest.mark.parametrize("first, last", [(1, 65535), (5201, 5208), (5200, 5209), (7, 7), (1000, 1999)])
def test_port_range_blocks_cover_exactly(first, last):
    covered = set()
    for value, mask in port_range_blocks(first, last):
        block = ports_of(value, mask)
        assert not covered & block
        covered |= block
    assert covered == set(range(first, last + 1))


def test_the_three_ranges_are_one_block_each_and_do_not_overlap():
    assert RECEIVER_BLOCK == (0x4000, 0xC000) and EPHEMERAL_BLOCK == (0x8000, 0x8000)
    receivers, ephemeral = ports_of(*RECEIVER_BLOCK), ports_of(*EPHEMERAL_BLOCK)
    assert receivers == set(range(tcp_ports.RECEIVER_PORT_MIN, tcp_ports.EPHEMERAL_PORT_MIN))
    assert ephemeral == set(range(tcp_ports.EPHEMERAL_PORT_MIN, 65536))
    with pytest.raises(ValueError, match="not one block"):
        one_block(5201, 5210)


def test_a_receivers_data_port_keeps_the_servers_low_bits_in_the_receivers_range():
    assert receiver_port(5201) == 16384 + 5201
    assert receiver_port(16383) == 32767
    for server_port in (0, 16384, 40000):
        with pytest.raises(ValueError, match="server port"):
            receiver_port(server_port)


def test_each_job_owns_its_own_server_ports_below_the_receivers():
    ranges = [job_port_range(i) for i in range(8)]
    assert ranges[0] == (5201, 5210) and ranges[1] == (5211, 5220)
    assert all(first == job_first_port(i) for i, (first, _) in enumerate(ranges))
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert ranges[-1][1] < tcp_ports.RECEIVER_PORT_MIN
