import { describe, expect, it } from "vitest";
import { CtrlCPresses } from "./ctrl-c.js";

describe("Ctrl-C in tenax chat", () => {
  it("interrupts a running turn; at the prompt the first says how to leave, a second within 2 s leaves", () => {
    const presses = new CtrlCPresses();
    expect(presses.press(1_000, true)).toBe("interrupt");
    // The turn ends interrupted; Ctrl-C again soon after leaves, as "(interrupting; ...)" said.
    expect(presses.press(1_500, false)).toBe("leave");
    const atPrompt = new CtrlCPresses();
    expect(atPrompt.press(1_000, false)).toBe("hint");
    expect(atPrompt.press(3_000, false)).toBe("hint");
    expect(atPrompt.press(4_999, false)).toBe("leave");
  });

  it("the Ctrl-C that interrupted a turn makes no double press with one after the next message", () => {
    const presses = new CtrlCPresses();
    expect(presses.press(1_000, true)).toBe("interrupt");
    // The next message is taken up and answered within the two seconds...
    presses.lineTaken();
    // ...and one Ctrl-C at the prompt after it says how to leave; it does not leave.
    expect(presses.press(1_400, false)).toBe("hint");
    expect(presses.press(1_500, false)).toBe("leave");
  });

  it("a Ctrl-C during the next turn interrupts it, however soon after the last", () => {
    const presses = new CtrlCPresses();
    expect(presses.press(1_000, false)).toBe("hint");
    presses.lineTaken();
    expect(presses.press(1_100, true)).toBe("interrupt");
    expect(presses.press(1_200, false)).toBe("leave");
  });
});
