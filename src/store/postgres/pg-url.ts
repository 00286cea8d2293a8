// A PostgreSQL URL as Tenax shows it. Apart from pg-connection.ts so that a SQLite profile's
// health, dashboard and CLI never load the pg package only to print an address.

/** The database URL with its password removed: safe for logs, health and error messages. */
export function urlWithoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "";
    parsed.searchParams.delete("password");
    return parsed.toString();
  } catch {
    // Not a URL (a key=value connection string): drop anything that looks like a password.
    return url.replace(/password\s*=\s*('[^']*'|\S+)/gi, "password=…").replace(/:[^:@/]*@/, "@");
  }
}
