"""Retransmissions a kernel run's path caused, from the sockets' own
counters (the run's streams_read_back facts: linuxpath/readback.py).

A retransmission of a segment the path delivered is spurious: a tail loss
probe or an RTO fired while the hosts held the ACKs back for two smoothed
RTTs or more. The receiver then holds the segment twice and says so with a
DSACK (tcp_send_dupack), which the sender counts in tcpi_dsack_dups. What
is left after those is what the path's drops made TCP resend."""


def spurious(facts: dict) -> int:
    """Segments resent although the receiver already had them (DSACKed)."""
    return sum(s["dsack_dups"] or 0 for s in facts["streams_read_back"])


def caused_by_the_path(facts: dict) -> int:
    """Segments retransmitted, less the spurious ones, over every stream."""
    return sum(s["total_retrans"] for s in facts["streams_read_back"]) - spurious(facts)
