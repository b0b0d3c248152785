// The kinds of task the annotator page can show, by the task's `kind` (count when absent). A new
// kind is a module like count.js (render a task into a box, return its rows and its answer) and
// one line here. Kinds other than count load when the first task of theirs is leased (online,
// before the task is held), so a count-only project's page does not carry them.
import * as count from "./count.js";

const KINDS = { count };
const LATER = { verify: () => import("./verify.js") };

export function kindOf(task) {
  const kind = KINDS[task.kind || "count"];
  if (!kind) throw new Error(`This page cannot show tasks of kind “${task.kind}”: reload it.`);
  return kind;
}

// The module of `task`'s kind, loaded if need be.
export async function loadKind(task) {
  const name = task.kind || "count";
  if (!KINDS[name] && LATER[name]) KINDS[name] = await LATER[name]();
  return kindOf(task);
}
