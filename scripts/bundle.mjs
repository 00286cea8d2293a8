// `npm run build`'s second step: rolldown.config.mjs through rolldown's API, which says one line
// where its command line lists every chunk (about 90 lines in every build, test run and bench).
import { build } from "rolldown";
import config from "../rolldown.config.mjs";

const started = performance.now();
const result = await build(config);
const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output);
const chunks = outputs.filter((o) => o.type === "chunk").length;
console.log(
  `bundled into ${config.output.dir}: ${chunks} chunks in ${Math.round(performance.now() - started)} ms`,
);
