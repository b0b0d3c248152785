// Annotators: the project's members, with their reliability from the latest report. Four
// columns, the role and the flag beside the name and the flag's reason on a row of its own, so
// the table fits a phone.
import { $, el } from "../lib/dom.js";
import { fixed, fmt } from "../lib/format.js";
import { api } from "../lib/http.js";
import { empty, headRow, table } from "./ui.js";

function nameCell(member, quality) {
  const cell = el("td", { class: "who" }, el("span", { class: "name", text: member.username }));
  if (member.role !== "annotator") cell.append(" ", el("span", { class: "pill", text: member.role }));
  if (quality.flagged) cell.append(" ", el("span", { class: "pill pill-flag", text: "flagged", title: quality.flag_reason || "" }));
  return cell;
}

// The skill of an annotator's Yes / No answers to verification tasks (1 truthful, 0 no better
// than chance: a yes-sayer's), under the count reliability.
function verificationSkill(q) {
  if (!q.verification_answers) return null;
  const yes = q.verification_yes_rate === null || q.verification_yes_rate === undefined ? "" : `, ${Math.round(100 * q.verification_yes_rate)} % yes`;
  return el("span", { class: "sub", text: `checks ${fixed(q.verification_skill, 2)}${yes}`, title: `Skill on ${q.verification_answers} verification answers` });
}

export function mountAnnotators({ base, store }) {
  function render() {
    const members = store.get("members");
    if (!members) return;
    const report = store.get("report");
    const byUser = new Map(((report && report.annotators) || []).map((row) => [row.annotator ?? row.user, row]));
    const shown = members.filter((m) => m.role === "annotator" || m.observations > 0);
    if (!shown.length) {
      $("annotators").replaceChildren(empty("Nobody has joined yet: share the invite link."));
      return;
    }
    const head = headRow(["Annotator", "Answers", "Seconds per answer", "Reliability"], (i) => i > 0);
    const rows = shown.flatMap((m) => {
      const q = byUser.get(m.user) || {};
      const row = el(
        "tr",
        { class: q.flagged && q.flag_reason ? "flagged" : "" },
        nameCell(m, q),
        el("td", { class: "num", text: fmt.format(m.observations) }),
        el("td", { class: "num", text: fixed(q.seconds_per_answer ?? q.median_seconds ?? q.speed, 1) }),
        el("td", { class: "num" }, fixed(q.reliability, 2), verificationSkill(q)),
      );
      // Why a flagged annotator's answers stopped counting, across the whole row.
      if (!(q.flagged && q.flag_reason)) return [row];
      return [row, el("tr", { class: "reason" }, el("td", { colspan: "4", class: "help", text: q.flag_reason }))];
    });
    // A private project's scores come from released (randomized) values: say so under the table.
    const note = store.get("project")?.private
      ? el("p", { class: "help", text: "Private project: reliability is estimated from randomized answers, with the mechanism's noise taken out; it shows – until an annotator has enough answers, many more than in an open project." })
      : null;
    $("annotators").replaceChildren(table(head, rows, "table annotators"), ...(note ? [note] : []));
  }
  store.watch(["members", "report", "project"], render);

  return {
    async load() {
      store.set("members", (await api("GET", `${base}/members/?limit=200`)).results);
    },
  };
}
