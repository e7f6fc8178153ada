// A run's events (the lines of its events.jsonl, see pyburn/train/runlog.py) folded into what
// a view draws, as RunState (pyburn/train/dashboard/state.py) folds them in Python: the
// curves of each metric by split, the status, where the run stands, and a log line per
// status change. `pyburn dash --web`'s page and the site's train page both draw from it.

/** A run's state: what RunState holds. */
export function freshRun(name) {
  return { name, offset: 0, curves: {}, status: "waiting", pausedFor: null, step: 0, epoch: 0,
           epochs: 0, messages: [] };
}

/** Takes in one event, as RunState.apply does. */
export function apply(run, event) {
  run.step = Math.max(run.step, event.step ?? 0);
  if (event.event === "metrics") {
    for (const [name, value] of Object.entries(event.metrics ?? {})) {
      if (typeof value !== "number" && value !== null) continue;  // null: not finite
      const splits = (run.curves[name] ??= {});
      (splits[event.split] ??= []).push([event.step, value]);
    }
    if (event.split === "train" && event.batch !== null) run.epoch = event.epoch;
    if (run.status === "waiting") run.status = "running";
  } else if (event.event === "status") {
    const state = event.state;
    let line = `${state} at step ${event.step}`;
    if (state === "started") {
      Object.assign(run, { status: "running", pausedFor: null, epochs: event.epochs ?? 0,
                           epoch: (event.epoch ?? 0) + 1 });
    } else if (state === "paused") {
      Object.assign(run, { status: "paused", pausedFor: event.reason ?? "asked" });
      if (run.pausedFor === "nan") line += ": the loss is not finite";
    } else if (state === "resumed") {
      Object.assign(run, { status: "running", pausedFor: null });
    } else if (["stopped", "aborted", "ended", "failed"].includes(state)) {
      Object.assign(run, { status: state, pausedFor: null });
      if (event.by) line = `${state} by ${event.by} at step ${event.step}`;
      if (event.error) line += `: ${event.error}`;
    }
    const at = new Date((event.time ?? 0) * 1000).toTimeString().slice(0, 8);
    run.messages.push(`${at} ${line}`);
  }
}
