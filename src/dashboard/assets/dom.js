// The page's DOM helpers: elements built from text nodes only, and times as the page shows them.

/** An element with attributes and children; strings become text nodes, so nothing is parsed as HTML. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);
const pad = (n) => String(n).padStart(2, "0");
export function clock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
export function when(ms) {
  if (ms === null || ms === undefined) return "?";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}
