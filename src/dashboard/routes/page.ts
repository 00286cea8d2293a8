// The page and its files, under the Content-Security-Policy of every dashboard answer; all but the
// stylesheet need a login.
import type { App } from "../../http/app.js";
import { ASSET_ROUTES, type Dashboard } from "../server.js";

export function registerPageRoutes(app: App, dashboard: Dashboard): void {
  for (const route of ASSET_ROUTES)
    app.route({
      method: ["GET", "HEAD"],
      url: route,
      // The login page is drawn with the stylesheet, which holds nothing of the profile.
      config: { public: route === "/style.css" },
      handler: async (_request, reply) => {
        const asset = dashboard.asset(route);
        if (!asset) throw new Error(`the dashboard has no file for ${route}`);
        return reply.type(asset.type).send(asset.body);
      },
    });
}
