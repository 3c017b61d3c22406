//! The GSO packer of the transmit path: new segments of one push gathered
//! into TSO/GSO packets of at most tcp_tso_autosize() segments, handed to
//! the network with `SenderEnv::transmit_burst`.

use crate::units::Time;

use super::ecn::SegEcn;
use super::sender::SenderEnv;

/// New segments gathered into one TSO/GSO packet: consecutive sequence
/// numbers with the same ECN field, at most `tso` of them
/// (tcp_write_xmit builds one skb of up to tcp_tso_segs() segments;
/// a CWR flag or a retransmission in between starts a new one).
#[derive(Clone, Copy, Default)]
pub(super) struct Gso {
    first: u64,
    n: u32,
    ecn: SegEcn,
}

impl Gso {
    /// Adds new segments `first..first + count` with one ECN field; a
    /// full packet goes out when the next segment arrives (or at `flush`),
    /// exactly as adding them one at a time.
    #[inline(always)]
    pub(super) fn add_range<E: SenderEnv>(&mut self, now: Time, first: u64, count: u32, ecn: SegEcn, tso: u32, env: &mut E) {
        let (mut seq, mut left) = (first, count);
        while left > 0 {
            if self.n > 0 && (self.n >= tso || ecn != self.ecn || seq != self.first + self.n as u64) {
                self.flush(now, env);
            }
            if self.n == 0 {
                *self = Gso { first: seq, n: 0, ecn };
            }
            // Here n < tso.
            let take = (tso - self.n).min(left);
            self.n += take;
            seq += take as u64;
            left -= take;
        }
    }

    #[inline(always)]
    pub(super) fn flush<E: SenderEnv>(&mut self, now: Time, env: &mut E) {
        match self.n {
            0 => {}
            1 => env.transmit(now, self.first, false, self.ecn),
            n => env.transmit_burst(now, self.first, n, false, self.ecn),
        }
        self.n = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SenderTimer;
    use crate::tcp::Codepoint;

    #[derive(Default)]
    struct Wire(Vec<(u64, u32, bool)>);

    impl SenderEnv for Wire {
        fn transmit(&mut self, _now: Time, seq: u64, _retrans: bool, ecn: SegEcn) {
            self.0.push((seq, 1, ecn.cwr));
        }
        fn transmit_burst(&mut self, _now: Time, first: u64, n: u32, _retrans: bool, ecn: SegEcn) {
            self.0.push((first, n, ecn.cwr));
        }
        fn schedule(&mut self, _at: Time, _timer: SenderTimer) {}
    }

    /// tcp_write_xmit() cuts new data into skbs of tcp_tso_segs()
    /// segments whatever ranges it is queued in; a CWR segment
    /// (tcp_ecn_send) is a packet of its own.
    #[test]
    fn ranges_are_cut_into_tso_sized_packets_as_segments_one_by_one_would_be() {
        let t = Time::ZERO;
        let ect = SegEcn { codepoint: Codepoint::Ect0, cwr: false };
        let (mut gso, mut wire) = (Gso::default(), Wire::default());
        gso.add_range(t, 0, 1, SegEcn { cwr: true, ..ect }, 4, &mut wire);
        gso.add_range(t, 1, 6, ect, 4, &mut wire);
        gso.add_range(t, 7, 5, ect, 4, &mut wire);
        gso.flush(t, &mut wire);
        assert_eq!(wire.0, vec![(0, 1, true), (1, 4, false), (5, 4, false), (9, 3, false)]);
        let (mut one, mut by_one) = (Gso::default(), Wire::default());
        one.add_range(t, 0, 1, SegEcn { cwr: true, ..ect }, 4, &mut by_one);
        for q in 1..12 {
            one.add_range(t, q, 1, ect, 4, &mut by_one);
        }
        one.flush(t, &mut by_one);
        assert_eq!(wire.0, by_one.0);
    }
}
