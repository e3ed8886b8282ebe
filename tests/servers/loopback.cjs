// Preload for Node test servers that call listen(port) without a host (all interfaces):
// binds them to 127.0.0.1, so servers started by tests never listen beyond loopback.
// Usage: node --require tests/servers/loopback.cjs server.js ...
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const numeric = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (numeric && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
