// The "refuse" outage: the simulator stops listening and cuts every connection, so a client's
// next call meets a refused connection (ECONNREFUSED) as it would with Telegram unreachable, and
// listens again on the same port when the outage is lifted (or after for_ms, which the HTTP control
// API needs, as it is unreachable too while it lasts).
import type { Server } from "node:http";

export class Listener {
  private refusing = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly server: Server,
    private readonly host: string,
    private readonly port: number,
  ) {}

  get refused(): boolean {
    return this.refusing;
  }

  /** Stop listening; after `forMs`, if given, run `lift` (which ends the outage and resumes). */
  refuse(forMs?: number, lift: () => void = () => void this.resume()): void {
    if (!this.refusing) {
      this.refusing = true;
      this.server.close();
      this.server.closeAllConnections();
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = forMs === undefined ? null : setTimeout(lift, forMs);
  }

  /** Listen again on the same port; resolves once it does. */
  async resume(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.refusing) return;
    this.refusing = false;
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port, this.host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
  }

  /** For close(): no timer left behind, and no listening again. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
