import { describe, expect, it } from "vitest";
import { escapeHtml, toTelegramHtml } from "./format.js";

describe("toTelegramHtml", () => {
  it("escapes what HTML would read as tags, everywhere", () => {
    expect(toTelegramHtml("if a < b && c > d")).toBe("if a &lt; b &amp;&amp; c &gt; d");
    expect(escapeHtml("<b>")).toBe("&lt;b&gt;");
  });

  it("code blocks and inline code keep their text as written, formatting inside them is not read", () => {
    const md = "Run:\n```bash\necho **not bold** <x> && ls\n```\nthen `a*b*c` and **done**";
    expect(toTelegramHtml(md)).toBe(
      'Run:\n<pre><code class="language-bash">echo **not bold** &lt;x&gt; &amp;&amp; ls</code></pre>\n' +
        "then <code>a*b*c</code> and <b>done</b>",
    );
  });

  it("bold, italic, strike, links and headings; a lone star or snake_case stays text", () => {
    expect(toTelegramHtml("# Title\n**b** *i* ~~s~~ [docs](https://example.com/a?b=1&c=2)")).toBe(
      '<b>Title</b>\n<b>b</b> <i>i</i> <s>s</s> <a href="https://example.com/a?b=1&amp;c=2">docs</a>',
    );
    expect(toTelegramHtml("2 * 3 = 6, my_var_name, a*b")).toBe("2 * 3 = 6, my_var_name, a*b");
    expect(toTelegramHtml("[x](javascript:alert(1))")).toBe("[x](javascript:alert(1))");
  });

  it("an unclosed fence runs to the end as code", () => {
    expect(toTelegramHtml("```\nopen <code>")).toBe("<pre><code>open &lt;code&gt;</code></pre>");
  });
});
