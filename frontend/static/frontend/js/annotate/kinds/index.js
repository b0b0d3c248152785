// The kinds of task the annotator page can show, by the task's `kind` (count when absent). A new
// kind is a module like count.js (render a task into a box, return its rows and its answer) and
// one line here.
import * as count from "./count.js";

const KINDS = { count };

export function kindOf(task) {
  const kind = KINDS[task.kind || "count"];
  if (!kind) throw new Error(`This page cannot show tasks of kind “${task.kind}”: reload it.`);
  return kind;
}
