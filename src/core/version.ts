// Tenax's version: what `tenax --version`, the gateway and the MCP client (to its servers) say.
export const VERSION = "0.1.0";
