// The gateway as the cron engine's host: a job run is a turn the gateway launches like any other,
// so it counts against gateway.max_turns, drains at a stop, is interrupted like any turn, and is
// resumed after a crash by the same path. A run never has anyone to approve a command: what the
// exec policy holds back is denied at once, with the reason in the transcript.
import { TenaxError } from "../core/errors.js";
import { type CronHost, cronResult, targetOf } from "../cron/host.js";
import { HttpError } from "../http/http-error.js";
import type { Gateway } from "./gateway.js";

export function gatewayCronHost(gateway: Pick<Gateway, "launch" | "interrupt" | "isRunning">): CronHost {
  return {
    async start(request) {
      try {
        const launched = await gateway.launch({
          sessionId: request.sessionId,
          text: request.text,
          // A job keeps its own --timeout: agent.turn_deadline is not its deadline.
          deadline: false,
          ...(request.model === null ? {} : { model: targetOf(request.model) }),
          ...(request.cwd === null ? {} : { cwd: request.cwd }),
        });
        return { result: launched.result.then(cronResult) };
      } catch (error) {
        if (
          HttpError.isInstance(error) &&
          (error.code === "too_many_turns" || error.code === "shutting_down")
        )
          throw new TenaxError(
            error.code === "too_many_turns" ? "too_many_turns" : "unavailable",
            error.message,
          );
        throw error;
      }
    },
    interrupt: (sessionId, reason) => gateway.interrupt(sessionId, reason, "stopped"),
    isRunning: (sessionId) => gateway.isRunning(sessionId),
  };
}
