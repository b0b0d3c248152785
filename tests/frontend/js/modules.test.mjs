// Every ES module of the pages parses, and every name it imports is exported by the module it
// names: what a browser would refuse at load time, found without one. Modules are linked, not
// run (they touch the DOM when run).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const JS = fileURLToPath(new URL("../../../frontend/static/frontend/js/", import.meta.url));

function modulesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return modulesUnder(full);
    return entry.name.endsWith(".js") ? [full] : [];
  });
}

const files = modulesUnder(JS);

test("the pages' modules are found", () => {
  const names = files.map((file) => path.relative(JS, file));
  for (const entry of ["annotate/main.js", "dashboard/main.js", "project_new.js", "join.js"]) {
    assert.ok(names.includes(entry), entry);
  }
});

for (const file of files) {
  test(`links: ${path.relative(JS, file)}`, async () => {
    const cache = new Map();
    const load = (name) => {
      if (!cache.has(name)) {
        cache.set(name, new vm.SourceTextModule(readFileSync(name, "utf8"), { identifier: path.relative(JS, name) }));
      }
      return cache.get(name);
    };
    const linker = (specifier, referencing) => {
      assert.match(specifier, /^\.\.?\/.*\.js$/, `${referencing.identifier}: relative .js imports only`);
      return load(path.resolve(path.dirname(path.join(JS, referencing.identifier)), specifier));
    };
    await load(file).link(linker);
  });

  test(`no unused imports: ${path.relative(JS, file)}`, () => {
    const source = readFileSync(file, "utf8");
    const imported = [...source.matchAll(/^import\s*\{([^}]*)\}/gm)].flatMap((m) => m[1].split(",").map((name) => name.trim().split(/\s+as\s+/).pop()));
    const unused = imported.filter((name) => name && source.match(new RegExp(`(?<![\\w$.])${name.replace("$", "\\$")}(?![\\w$])`, "g")).length < 2);
    assert.deepEqual(unused, []);
  });
}
