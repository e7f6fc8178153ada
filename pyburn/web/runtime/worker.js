// The module Web Worker that runs Python for a page (see pyburn.js): Pyodide 314 refuses
// classic workers. Requests come as {id, op, args} and are answered with {id, value} or
// {id, error}; output, progress and status go out as {event, data} whenever they happen.
// Requests are handled concurrently: while a long `async def` (a training loop) awaits, a
// request to pause it runs.

import { Session } from "./session.js";
import { pack } from "./wire.js";

const session = new Session((event, data) => postMessage({ event, data }));

const OPS = {
  start: (baseURL, options) => session.start(baseURL, options),
  run: (code) => session.run(code),
  call: (name, ...args) => session.call(name, args),
};

self.onmessage = async ({ data: { id, op, args } }) => {
  let reply;
  let transfer = [];
  try {
    const [value, buffers] = pack(await OPS[op](...args));
    [reply, transfer] = [{ id, value }, buffers];
  } catch (error) {
    reply = { id, error: String(error?.message ?? error) };
  }
  try {
    postMessage(reply, transfer);
  } catch (error) {
    // A result postMessage cannot copy (a function, a proxy): say so instead of hanging.
    postMessage({ id, error: `the result of ${op} cannot be sent to the page: ${error.message}` });
  }
};
