// Runs the script of an `unumctl trace` page in Node with a minimal DOM stub (a quick check
// without a browser; tests/unumctl/observe/test_trace.py opens it in chromium): prints {"bars", "nodes",
// "elements"}. Used by tests/unumctl/observe/test_history.py.
const fs = require("fs");
const html = fs.readFileSync(process.argv[2], "utf8");
const data = html.match(/<script type="application\/json" id="data">([\s\S]*?)<\/script>/)[1];
const code = html.match(/<script>([\s\S]*?)<\/script>/)[1];
let made = 0;
function El(tag) { return {tag, attrs: {}, children: [], style: {}, textContent: "",
  set innerHTML(v) { throw new Error("the page set innerHTML (text must go in as textContent)"); },
  setAttribute(k, v) { this.attrs[k] = v; }, appendChild(c) { this.children.push(c); made++; return c; },
  addEventListener() {} }; }
// the data element's text as the HTML parser gives it: the content up to the first </script>
const byId = {data: Object.assign(El("script"), {textContent: data})};
global.document = {getElementById: id => byId[id] || (byId[id] = El(id)),
  createElementNS: (ns, t) => El(t), createElement: t => El(t),
  createTextNode: t => ({tag: "#text", textContent: String(t)})};
new Function(code)();
const tl = byId.timeline.children.filter(c => c.tag === "rect" && c.attrs.class === "bar").length;
const nodes = byId.graph.children.filter(c => c.tag === "g").length;
console.log(JSON.stringify({bars: tl, nodes, elements: made}));
