// Tasks leased ahead: besides the task on screen the page holds up to `maxHeld - 1` more, leased
// by naming the leases it has (`{"holding": [ids]}`), so the next task shows at once after a
// submit and, with the connection gone, every held task can still be answered. No DOM.

// `lease(holding)`: asks the server for a task, naming the assignments held; resolves to the task
// or null (none for now), rejects when it fails. `onChange(tasks)`: the tasks held, whenever
// they change (the page keeps them for a reload without a connection).
export function createLookahead({ lease, maxHeld, onChange = () => {} }) {
  let held = [];
  const holds = (assignment) => held.some((task) => task.assignment === assignment);
  return {
    get size() {
      return held.length;
    },
    get tasks() {
      return [...held];
    },
    // The next task held ahead, out of the list; undefined if none.
    take() {
      const next = held.shift();
      onChange(held);
      return next;
    },
    forget(assignment) {
      held = held.filter((task) => task.assignment !== assignment);
      onChange(held);
    },
    // Tasks held before the page was reloaded, ahead of any leased from now on.
    restore(tasks) {
      held = [...tasks, ...held.filter((task) => !tasks.some((t) => t.assignment === task.assignment))];
      onChange(held);
    },
    // Lease until `maxHeld` are held, counting the task on screen. Only with nothing waiting to
    // be sent (`canLease()`): the server hands back live leases the page does not name, and an
    // answered lease stays live there until its answer arrives. Best effort: stops at the first
    // failure. `current()`: the task on screen, read again after each lease.
    async fill({ current, canLease, isAnswered }) {
      while (current() && canLease() && held.length < maxHeld - 1) {
        const holding = [current().assignment, ...held.map((task) => task.assignment)];
        let next;
        try {
          next = await lease(holding);
        } catch {
          return;
        }
        if (next === null || holding.includes(next.assignment) || isAnswered(next.assignment)) return;
        // The task on screen may have been answered meanwhile; the page takes it from here then.
        if (current()?.assignment !== next.assignment && !holds(next.assignment)) {
          held.push(next);
          onChange(held);
        }
      }
    },
  };
}
