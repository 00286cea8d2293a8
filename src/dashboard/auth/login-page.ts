// The dashboard's login page, served to a browser that has no session: why it has none (a link
// already used, a login revoked), and how to get one, in the auth mode in force. Built on the
// server as plain HTML (the page's Content-Security-Policy allows no inline script), every value
// escaped; it links only /style.css, which needs no login.

export interface LoginPageFacts {
  mode: "token" | "oidc";
  /** What went wrong with the credential the browser presented, if it presented one. */
  problem: { message: string; hint: string } | null;
  /** The profile, so that the command it shows is the one to run. */
  profile: string;
  /** mode oidc: the provider people log in with. */
  issuer?: string;
}

export function loginPage(facts: LoginPageFacts): string {
  const problem = facts.problem
    ? `<div class="banner" role="alert">${escapeHtml(facts.problem.message)}<br />${escapeHtml(facts.problem.hint)}</div>`
    : "";
  const profileFlag = facts.profile === "default" ? "" : ` --profile ${facts.profile}`;
  const how =
    facts.mode === "token"
      ? `<p>On the machine that runs Tenax, run</p>
    <pre>tenax${escapeHtml(profileFlag)} dashboard link</pre>
    <p>and open the link it prints on this device. A link works once, and only for a while (10 minutes unless it was made with --ttl); the login it starts lasts until you log out, or until it goes unused for dashboard.auth.refresh_ttl.</p>`
      : `<p><a class="button" href="/auth/oidc/start">Log in with ${escapeHtml(facts.issuer ?? "your identity provider")}</a></p>`;
  return page(
    "Log in",
    `<h1>Tenax dashboard</h1>
    <p class="muted">This dashboard shows every transcript of the profile, so it needs a login.</p>
    ${problem}
    ${how}`,
  );
}

/** A page for a link preview (a chat app fetching the URL to show a card): the link stays unused. */
export function previewPage(): string {
  return page(
    "Tenax login link",
    `<h1>Tenax dashboard login link</h1>
    <p>Open this link in a browser to log in. It works once.</p>`,
  );
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="robots" content="noindex" />
    <title>${escapeHtml(title)}</title>
    <link rel="stylesheet" href="/style.css" />
  </head>
  <body class="login">
    ${body}
  </body>
</html>
`;
}

export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );
}

/**
 * User agents of link previews: chat apps and social sites fetch a pasted URL to draw a card, and a
 * one-time link fetched that way would be used up before its owner opens it. Each with where it
 * comes from.
 */
const PREVIEW_AGENTS: ReadonlyArray<[RegExp, string]> = [
  [/TelegramBot/i, "Telegram's link preview"],
  [/WhatsApp/i, "WhatsApp's link preview"],
  [/Slackbot|Slack-ImgProxy/i, "Slack's unfurler"],
  [/Discordbot/i, "Discord's embed"],
  [/facebookexternalhit|Facebot/i, "Facebook and Messenger previews"],
  [/Twitterbot/i, "X's cards"],
  [/LinkedInBot/i, "LinkedIn's previews"],
  [/SkypeUriPreview/i, "Microsoft Teams and Skype previews"],
];

export function isLinkPreview(userAgent: string | null): boolean {
  return userAgent !== null && PREVIEW_AGENTS.some(([pattern]) => pattern.test(userAgent));
}
