//! The `[tcp]` table: the sender's and the receiver's parameters (Linux's sysctls and
//! per-route settings), each checked against its bound.

use super::*;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTcp {
    handshake: Option<bool>,
    mss: Option<u32>,
    init_cwnd: Option<u32>,
    hz: Option<u32>,
    rack: Option<bool>,
    tlp: Option<bool>,
    delack_ms: Option<f64>,
    quickack: Option<u32>,
    quickack_always: Option<bool>,
    ts_granularity_ms: Option<f64>,
    rto_min_ms: Option<f64>,
    slow_start_after_idle: Option<bool>,
    wmem: Option<[f64; 3]>,
    rmem: Option<[f64; 3]>,
    autotune: Option<bool>,
}

pub(super) fn build_tcp(
    raw: RawTcp,
    ctx: &Ctx,
) -> Result<(SenderConfig, ReceiverConfig), ScenarioError> {
    let mut s = SenderConfig::default();
    let mut r = ReceiverConfig::default();
    s.handshake = raw.handshake.unwrap_or(s.handshake);
    if let Some(mss) = raw.mss {
        if !(64..=MAX_MSS).contains(&mss) {
            return Err(ctx.err(
                "tcp.mss",
                format!("must be in 64..={MAX_MSS} (a 1500-byte IP packet), got {mss}"),
            ));
        }
        s.mss = mss;
        r.advmss = mss;
    }
    if let Some(v) = raw.wmem {
        s.wmem = limits::socket_buffer(ctx, "tcp.wmem", v)?;
    }
    if let Some(v) = raw.rmem {
        r.rmem = limits::socket_buffer(ctx, "tcp.rmem", v)?;
    }
    r.autotune = raw.autotune.unwrap_or(r.autotune);
    if let Some(w) = raw.init_cwnd {
        if w == 0 {
            return Err(ctx.err("tcp.init_cwnd", "must be >= 1"));
        }
        if w > MAX_INIT_CWND {
            return Err(ctx.err(
                "tcp.init_cwnd",
                format!("{w} is above the limit {MAX_INIT_CWND} packets"),
            ));
        }
        s.init_cwnd = w;
    }
    if let Some(hz) = raw.hz {
        if ![100, 250, 300, 1000].contains(&hz) {
            return Err(ctx.err(
                "tcp.hz",
                format!("must be one of 100, 250, 300, 1000 (CONFIG_HZ), got {hz}"),
            ));
        }
        s.hz = hz;
    }
    s.rack = raw.rack.unwrap_or(s.rack);
    s.tlp = raw.tlp.unwrap_or(s.tlp);
    s.slow_start_after_idle = raw.slow_start_after_idle.unwrap_or(s.slow_start_after_idle);
    if let Some(v) = raw.rto_min_ms {
        positive(ctx, "tcp.rto_min_ms", v)?;
        s.rto_min = limits::delay_ms(ctx, "tcp.rto_min_ms", v, true)?;
    }
    if let Some(v) = raw.delack_ms {
        positive(ctx, "tcp.delack_ms", v)?;
        r.delack_min = limits::delay_ms(ctx, "tcp.delack_ms", v, true)?;
    }
    if let Some(q) = raw.quickack {
        r.max_quickacks = q;
    }
    r.quickack_always = raw.quickack_always.unwrap_or(r.quickack_always);
    if let Some(v) = raw.ts_granularity_ms {
        positive(ctx, "tcp.ts_granularity_ms", v)?;
        let g = limits::delay_ms(ctx, "tcp.ts_granularity_ms", v, true)?;
        s.ts_granularity = g;
        r.ts_granularity = g;
    }
    Ok((s, r))
}
