// Tasks leased ahead: besides the task on screen the page holds up to `maxHeld - 1` more, leased
// by naming the leases it has (`{"holding": [ids]}`), so the next task shows at once after a
// submit and, with the connection gone, every held task can still be answered. An answer's reply
// may bring one (`holdingForNext`, `offer`). No DOM.

// `lease(holding)`: asks the server for a task, naming the assignments held; resolves to the task
// or null (none for now), rejects when it fails.
export function createLookahead({ lease, maxHeld }) {
  let held = [];
  const holdingOf = (current) => (current ? [current, ...held] : held).map((task) => task.assignment);
  // Keep `next` unless the page has it already (on screen, held, answered). True if kept.
  function offer(next, { current, isAnswered }) {
    if (!next || holdingOf(current).includes(next.assignment) || isAnswered(next.assignment)) return false;
    held.push(next);
    return true;
  }
  return {
    get size() {
      return held.length;
    },
    // The next task held ahead, out of the list; undefined if none.
    take() {
      return held.shift();
    },
    forget(assignment) {
      held = held.filter((task) => task.assignment !== assignment);
    },
    // The leases an answer names when it asks for the next task; null when no room.
    holdingForNext(current) {
      const holding = holdingOf(current);
      return holding.length < maxHeld ? holding : null;
    },
    offer,
    // Drops the held tasks `unfit(task)`.
    discard(unfit) {
      const before = held.length;
      held = held.filter((task) => !unfit(task));
      return before - held.length;
    },
    // Lease until `maxHeld` are held, counting the task on screen (`current()`, read again after
    // each lease), only with no answer waiting (`canLease()`: the server hands back live leases
    // not named, and an answered lease stays live there until its answer arrives). Best effort:
    // stops at the first failure.
    async fill({ current, canLease, isAnswered }) {
      while (current() && canLease() && held.length < maxHeld - 1) {
        let next;
        try {
          next = await lease(holdingOf(current()));
        } catch {
          return;
        }
        if (!offer(next, { current: current(), isAnswered })) return;
      }
    },
  };
}
