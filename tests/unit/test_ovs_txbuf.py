"""Finding Open vSwitch's shared transmit socket in /proc/net/packet (no root needed)."""

import pytest

from topo import ovs_txbuf

PROC_NET_PACKET = """\
sk               RefCnt Type Proto  Iface R Rmem   User   Inode
00000000bf095955 2      3    0000   0     0 0      0      38553157
000000007808a6fb 3      3    0003   4297  1 0      0      42923927
00000000deadbeef 3      3    0003   4298  1 0      0      42923928
"""


def test_the_unbound_socket_is_the_transmit_socket():
    assert ovs_txbuf.unbound_packet_socket_inodes(PROC_NET_PACKET) == {38553157}


def test_no_packet_sockets_means_none_found():
    assert ovs_txbuf.unbound_packet_socket_inodes(PROC_NET_PACKET.splitlines()[0]) == set()


def test_an_unknown_format_is_refused():
    with pytest.raises(ovs_txbuf.TxBufferError, match="format"):
        ovs_txbuf.unbound_packet_socket_inodes("something else\n1 2 3\n")
