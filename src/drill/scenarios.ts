// Every scenario of `tenax drill`, in the order of the layers from the provider up to the store
// (the cron rows after the gateway's: they kill and restart a gateway too; the chat platforms'
// row after cron's, as cron delivers through them; the MCP tool servers' after the platforms').
import { agentScenarios } from "./agent-scenarios.js";
import { cronScenarios } from "./cron-scenarios.js";
import { gatewayScenarios } from "./gateway-scenarios.js";
import { mcpScenarios } from "./mcp-scenarios.js";
import { platformScenarios } from "./platform-scenarios.js";
import { providerScenarios } from "./provider-scenarios.js";
import type { Scenario } from "./runner.js";
import { storeScenarios } from "./store-scenarios.js";

export const DRILL_SCENARIOS: readonly Scenario[] = [
  ...providerScenarios,
  ...agentScenarios,
  ...gatewayScenarios,
  ...cronScenarios,
  ...platformScenarios,
  ...mcpScenarios,
  ...storeScenarios,
];
