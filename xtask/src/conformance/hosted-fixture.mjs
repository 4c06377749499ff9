// The hosted fixture server of the conformance task: the tools of the
// suite's server scenarios that a guest cannot serve by design (they ask
// the client: sampling and elicitation), over streamable HTTP on HTTPS.
// Warden reaches it as https://mcp.example.com/mcp through its resolver
// override, as the package `test` (so `warden serve` publishes
// `test_sampling`, ...), and relays each request to the suite's client.
//
// Usage: node hosted-fixture.mjs PORT KEY_PEM CERT_PEM
import https from "node:https";
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [port, keyPath, certPath] = process.argv.slice(2);

const none = { type: "object", properties: {} };
const tools = [
  {
    name: "sampling",
    description: "Ask the client's model to complete a prompt.",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
  },
  {
    name: "elicitation",
    description: "Ask the client's user for a username and an email.",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  },
  { name: "elicitation_sep1034_defaults", description: "Elicit with defaults for every primitive type.", inputSchema: none },
  { name: "elicitation_sep1330_enums", description: "Elicit with the five enum forms.", inputSchema: none },
];

const schemas = {
  elicitation: {
    type: "object",
    properties: {
      username: { type: "string", description: "User's response" },
      email: { type: "string", description: "User's email address" },
    },
    required: ["username", "email"],
  },
  elicitation_sep1034_defaults: {
    type: "object",
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
      verified: { type: "boolean", default: true },
    },
  },
  elicitation_sep1330_enums: {
    type: "object",
    properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: {
        type: "string",
        oneOf: [
          { const: "value1", title: "First Option" },
          { const: "value2", title: "Second Option" },
          { const: "value3", title: "Third Option" },
        ],
      },
      legacyEnum: {
        type: "string",
        enum: ["opt1", "opt2", "opt3"],
        enumNames: ["Option One", "Option Two", "Option Three"],
      },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: {
        type: "array",
        items: {
          anyOf: [
            { const: "value1", title: "First Choice" },
            { const: "value2", title: "Second Choice" },
            { const: "value3", title: "Third Choice" },
          ],
        },
      },
    },
  },
};

function server() {
  const server = new Server({ name: "conformance-hosted-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    const options = { relatedRequestId: extra.requestId };
    if (name === "sampling") {
      const answer = await server.request(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: args.prompt } }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
        options,
      );
      return { content: [{ type: "text", text: `LLM response: ${answer.content.text}` }] };
    }
    if (name in schemas) {
      const message = args.message ?? `Conformance fixture: ${name}`;
      const answer = await server.request(
        { method: "elicitation/create", params: { message, requestedSchema: schemas[name] } },
        ElicitResultSchema,
        options,
      );
      return {
        content: [{ type: "text", text: `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}` }],
      };
    }
    return { isError: true, content: [{ type: "text", text: `unknown tool ${name}` }] };
  });
  return server;
}

// Sessions (a server's request is answered on a POST of its own, which
// must reach the same server instance).
const transports = {};

async function handle(req, res, body) {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? transports[sid] : undefined;
  if (!transport && !sid && req.method === "POST" && body?.method === "initialize") {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports[id] = transport;
      },
    });
    transport.onclose = () => delete transports[transport.sessionId];
    await server().connect(transport);
  }
  if (!transport) {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "invalid or missing session" }, id: null }));
    return;
  }
  await transport.handleRequest(req, res, body);
}

https
  .createServer({ key: fs.readFileSync(keyPath), cert: fs.readFileSync(certPath) }, (req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      let body;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        res.writeHead(400).end();
        return;
      }
      handle(req, res, body).catch((error) => {
        console.error(error);
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  })
  .listen(Number(port), "127.0.0.1", () => console.log(`listening on ${port}`));
