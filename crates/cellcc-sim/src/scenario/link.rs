//! One direction's link from its `[downlink]` / `[uplink]` table: a trace (scaled), a
//! synthetic model or a constant rate, with its queue, loss, outages, jitter and HARQ.

use super::*;
use cellcc_link::MAX_TRACE_OPPORTUNITIES;

/// `trace` with every opportunity repeated `k` times (capacity × k, same timing).
fn scaled(trace: &Trace, k: u32) -> Result<Trace, String> {
    if k == 0 {
        return Err("must be a whole number >= 1".into());
    }
    if k > limits::MAX_SCALE {
        return Err(format!("{k} is above the limit {}", limits::MAX_SCALE));
    }
    let stamps = trace.timestamps_ms();
    let lines = stamps.len().saturating_mul(k as usize);
    if lines > MAX_TRACE_OPPORTUNITIES {
        return Err(format!(
            "{k} gives {lines} delivery opportunities, above the limit \
             {MAX_TRACE_OPPORTUNITIES} per trace; use a smaller scale"
        ));
    }
    let mut out = Vec::with_capacity(stamps.len().saturating_mul(k as usize));
    for &t in stamps {
        out.extend(std::iter::repeat_n(t, k as usize));
    }
    Trace::from_timestamps(out, &format!("{} x{k}", trace.name())).map_err(|e| e.to_string())
}

pub(super) fn build_link(
    mut raw: RawLink,
    key: &str,
    seed: u64,
    ctx: &Ctx,
) -> Result<LinkConfig, ScenarioError> {
    let mut synth = None;
    if raw.scale.is_some() && (raw.trace.is_none() || raw.synth.is_some()) {
        return Err(ctx.err(format!("{key}.scale"), "applies to `trace` links only"));
    }
    if raw.synth_seed.is_some() && raw.synth.is_none() {
        return Err(ctx.err(format!("{key}.synth_seed"), "applies to `synth` links only"));
    }
    if let Some(cfg) = raw.synth.take() {
        if raw.trace.is_some() || raw.rate_mbps.is_some() {
            return Err(ctx.err(key, "give one of `trace`, `rate_mbps` or `synth`"));
        }
        // Same scenario seed, same trace; the uplink gets its own.
        let seed = raw
            .synth_seed
            .unwrap_or(seed ^ if key == "uplink" { 0x5eed_0000_0001 } else { 0 });
        let trace = cellcc_link::synth::generate(&cfg, seed)
            .map_err(|e| ctx.err(format!("{key}.synth.{}", e.field), e.message))?;
        raw.trace = Some(String::new());
        synth = Some((trace, format!("synth {} (seed {seed})", cfg.model())));
    }
    let (service, label) = match (&raw.trace, raw.rate_mbps) {
        (Some(_), Some(_)) => {
            return Err(ctx.err(key, "give either `trace` or `rate_mbps`, not both"));
        }
        (None, None) => {
            return Err(ctx.err(
                key,
                "missing the link capacity: give `trace = \"FILE\"`, `rate_mbps = N` or `synth = { model = ... }`",
            ))
        }
        (Some(_), None) if synth.is_some() => {
            let (trace, label) = synth.take().expect("checked");
            let mode = match raw.mode.unwrap_or(RawMode::Loop) {
                RawMode::Loop => TraceMode::Loop,
                RawMode::Once => TraceMode::Once,
            };
            (
                LinkService::Trace {
                    trace: Arc::new(trace),
                    mode,
                },
                label,
            )
        }
        (Some(t), None) => {
            let path = resolve(t, ctx.base_dir);
            let mut trace = Trace::from_file(&path)
                .map_err(|e| ctx.err(format!("{key}.trace"), e.to_string()))?;
            if let Some(k) = raw.scale.filter(|&k| k != 1) {
                trace = scaled(&trace, k).map_err(|e| ctx.err(format!("{key}.scale"), e))?;
            }
            let mode = match raw.mode.unwrap_or(RawMode::Loop) {
                RawMode::Loop => TraceMode::Loop,
                RawMode::Once => TraceMode::Once,
            };
            let label = Path::new(t)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(t)
                .to_string();
            (
                LinkService::Trace {
                    trace: Arc::new(trace),
                    mode,
                },
                label,
            )
        }
        (None, Some(r)) => {
            if raw.mode.is_some() {
                return Err(ctx.err(format!("{key}.mode"), "`mode` applies to trace links only"));
            }
            let rate = limits::rate(ctx, &format!("{key}.rate_mbps"), r)?;
            (
                LinkService::Constant {
                    rate,
                    framing_bytes: 0,
                },
                format!("{r} Mbit/s"),
            )
        }
    };
    let delay_ms = non_negative(ctx, &format!("{key}.delay_ms"), raw.delay_ms.unwrap_or(0.0))?;
    let delay = limits::delay_ms(ctx, &format!("{key}.delay_ms"), delay_ms, false)?;
    let loss = raw.loss.unwrap_or_default();
    if let LossConfig::Bernoulli { p } = loss {
        if !(0.0..1.0).contains(&p) {
            return Err(ctx.err(
                format!("{key}.loss"),
                format!("must be a probability in [0, 1), got {p}"),
            ));
        }
    }
    loss.validate()
        .map_err(|e| param_err(ctx, &format!("{key}.loss"), e))?;
    for (i, o) in raw.outages.iter().enumerate() {
        for (name, v) in [("start_s", o.start_s), ("duration_s", o.duration_s)] {
            if v.is_finite() && v > limits::MAX_DURATION_S {
                return Err(ctx.err(
                    format!("{key}.outages[{i}].{name}"),
                    format!(
                        "{} is above the limit {} s",
                        limits::show(v),
                        limits::MAX_DURATION_S
                    ),
                ));
            }
        }
    }
    // Outage errors name their entry (`outages[1].start_s`) already.
    let outages = Outages::from_config(&raw.outages).map_err(|e| param_err(ctx, key, e))?;
    if let Some(j) = &raw.jitter {
        j.validate()
            .map_err(|e| param_err(ctx, &format!("{key}.jitter"), e))?;
        limits::jitter(ctx, &format!("{key}.jitter"), j)?;
    }
    if let Some(h) = &raw.harq {
        h.validate()
            .map_err(|e| param_err(ctx, &format!("{key}.harq"), e))?;
        limits::delay_ms(ctx, &format!("{key}.harq.rtt_ms"), h.rtt_ms, true)?;
    }
    let queue = raw.queue.unwrap_or_default();
    check_queue(ctx, &format!("{key}.queue"), &queue)?;
    Ok(LinkConfig {
        service,
        queue,
        delay,
        loss,
        outages,
        jitter: raw.jitter,
        harq: raw.harq,
        label,
    })
}
