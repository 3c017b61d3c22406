//! A validation tool: a BPF program and a native algorithm driven in
//! lockstep by the same connection. Every hook runs on the native
//! algorithm with a copy of the connection, then on the program; the
//! first hook after which what they may write (cwnd, its counter,
//! ssthresh, the pacing rate) or what they return differs stops the run,
//! naming the hook, the time and both answers. A port that passes runs
//! exactly as its native twin; one that fails shows where the two codes
//! part (crates/sim/tests/bpf_ccas.rs).

use super::cca::BpfCca;
use crate::cc::{AckSample, CaState, ConnState, CongestionControl, CwndEvent, RateSample};

/// The program and its native twin.
pub struct Lockstep {
    pub bpf: BpfCca,
    pub native: Box<dyn CongestionControl>,
}

/// What a hook may change, for comparison.
fn written(tp: &ConnState) -> (u32, u32, u32, u64) {
    (tp.snd_cwnd, tp.snd_cwnd_cnt, tp.snd_ssthresh, tp.pacing_rate.0)
}

impl Lockstep {
    fn step<R: PartialEq + std::fmt::Debug>(
        &mut self,
        hook: &str,
        tp: &mut ConnState,
        native: impl FnOnce(&mut dyn CongestionControl, &mut ConnState) -> R,
        bpf: impl FnOnce(&mut BpfCca, &mut ConnState) -> R,
    ) -> R {
        let before = tp.clone();
        let mut shadow = tp.clone();
        let n = native(self.native.as_mut(), &mut shadow);
        let b = bpf(&mut self.bpf, tp);
        if n != b || written(&shadow) != written(tp) {
            panic!(
                "lockstep: {} and {} part at {hook} (t = {:?}, ca_state {:?}): returned {n:?} vs {b:?}; \
                 (cwnd, cwnd_cnt, ssthresh, pacing) {:?} vs {:?}; before {:?}",
                self.native.name(),
                self.bpf.name(),
                before.now,
                before.ca_state,
                written(&shadow),
                written(tp),
                written(&before)
            );
        }
        b
    }
}

impl CongestionControl for Lockstep {
    fn name(&self) -> &'static str {
        self.bpf.name()
    }
    fn init(&mut self, tp: &mut ConnState) {
        self.step("init", tp, |c, t| c.init(t), |c, t| c.init(t))
    }
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        let mut t = tp.clone();
        self.step("ssthresh", &mut t, |c, t| c.ssthresh(t), |c, t| c.ssthresh(t))
    }
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        self.step("cong_avoid", tp, |c, t| c.cong_avoid(t, acked), |c, t| c.cong_avoid(t, acked))
    }
    fn set_state(&mut self, tp: &mut ConnState, s: CaState) {
        self.step("set_state", tp, |c, t| c.set_state(t, s), |c, t| c.set_state(t, s))
    }
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        self.step("cwnd_event", tp, |c, t| c.cwnd_event(t, ev), |c, t| c.cwnd_event(t, ev))
    }
    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        self.step("pkts_acked", tp, |c, t| c.pkts_acked(t, sample), |c, t| c.pkts_acked(t, sample))
    }
    fn in_ack_event(&mut self, tp: &mut ConnState, flags: u32) {
        self.step("in_ack_event", tp, |c, t| c.in_ack_event(t, flags), |c, t| c.in_ack_event(t, flags))
    }
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        self.step("undo_cwnd", tp, |c, t| c.undo_cwnd(t), |c, t| c.undo_cwnd(t))
    }
    fn needs_ecn(&self) -> bool {
        self.bpf.needs_ecn()
    }
    fn owns_cwnd_and_pacing(&self) -> bool {
        assert_eq!(self.bpf.owns_cwnd_and_pacing(), self.native.owns_cwnd_and_pacing(), "lockstep: cong_control on one side only");
        self.bpf.owns_cwnd_and_pacing()
    }
    fn cong_control(&mut self, tp: &mut ConnState, rs: &RateSample) {
        self.step("cong_control", tp, |c, t| c.cong_control(t, rs), |c, t| c.cong_control(t, rs))
    }
    fn min_tso_segs(&self, tp: &ConnState) -> u32 {
        self.bpf.min_tso_segs(tp)
    }
}
