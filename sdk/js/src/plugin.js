// A Talaria tool plugin in JavaScript: two tools, `word_count` (pure
// computation) and `page_title` (outgoing HTTP with `fetch`).
//
// componentize-js turns this ES module into a component of the world
// `tool-plugin` (see wit/). The `tool-provider` interface is the exported
// object `toolProvider`; host interfaces are imported by their WIT names.
// A tool's `call` may be `async`: componentize-js runs the event loop until
// the promise `callTool` returns settles.

import { log } from 'talaria:plugin/log@0.1.3';

// A failed call: the host passes the message to the model. `kind` is the
// tool-error case: 'invalid-arguments', 'denied' or 'failed'.
class ToolError extends Error {
  constructor(kind, message) {
    super(message);
    this.payload = { tag: kind, val: message };
  }
}

const invalid = (message) => new ToolError('invalid-arguments', message);

const wordCountSchema = {
  type: 'object',
  properties: {
    text: { type: 'string', description: 'The text to count the words of.' },
    min_length: {
      type: 'integer',
      minimum: 1,
      description: 'Count only words of at least this many characters (default 1).',
    },
  },
  required: ['text'],
  additionalProperties: false,
};

// A letter (of a script with case, or CJK and beyond) or a digit. (The
// engine has no Unicode property escapes like \p{L}.)
function isWordChar(ch) {
  return /[0-9]/.test(ch) || ch.toLowerCase() !== ch.toUpperCase() || ch.codePointAt(0) >= 0x2e80;
}

// A word is a run of non-space characters with a letter or digit in it,
// without the punctuation around it ("Hello," is "Hello").
function trimPunctuation(token) {
  const chars = [...token];
  let start = 0;
  let end = chars.length;
  while (start < end && !isWordChar(chars[start])) start += 1;
  while (end > start && !isWordChar(chars[end - 1])) end -= 1;
  return chars.slice(start, end).join('');
}

// Refuses arguments the schema of tool `name` does not list.
function checkKnown(name, schema, args) {
  const unknown = Object.keys(args).filter((key) => !(key in schema.properties));
  if (unknown.length > 0) {
    const known = Object.keys(schema.properties).join(', ');
    throw invalid(`unknown argument(s) ${unknown.join(', ')}; ${name} takes ${known}`);
  }
}

function wordCount(args) {
  checkKnown('word_count', wordCountSchema, args);
  if (typeof args.text !== 'string') {
    throw invalid('text is required and must be a string');
  }
  const minLength = args.min_length ?? 1;
  if (!Number.isInteger(minLength) || minLength < 1) {
    throw invalid('min_length must be an integer of at least 1');
  }
  const words = args.text
    .split(/\s+/)
    .map(trimPunctuation)
    .filter((word) => word !== '' && [...word].length >= minLength);
  const unique = new Set(words.map((word) => word.toLowerCase())).size;
  return { words: words.length, unique };
}

const pageTitleSchema = {
  type: 'object',
  properties: {
    url: { type: 'string', description: 'The http:// or https:// URL of the page.' },
  },
  required: ['url'],
  additionalProperties: false,
};

// How much of a page without a <title> the result shows.
const START_LENGTH = 200;

// The few character references a title usually holds.
const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text) {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, ref) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[ref.toLowerCase()] ?? whole;
  });
}

// Outgoing HTTP: `fetch` goes through the host, which lets a request through
// only to a host:port the user granted (plugin.toml asks for it under
// [capabilities] network). A refused request fails like a network error
// ("NetworkError when attempting to fetch resource."); the host then adds
// its reason, naming the missing grant, to the error this tool throws.
async function pageTitle(args) {
  checkKnown('page_title', pageTitleSchema, args);
  if (typeof args.url !== 'string' || !/^https?:\/\/[^/]/i.test(args.url)) {
    throw invalid('url is required and must be an http:// or https:// URL');
  }
  let response;
  let body;
  try {
    response = await fetch(args.url);
    body = await response.text();
  } catch (error) {
    throw new ToolError('failed', `fetching ${args.url} failed: ${error.message}`);
  }
  const found = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(body);
  if (found !== null) {
    const title = decodeEntities(found[1]).replace(/\s+/g, ' ').trim();
    return { url: args.url, status: response.status, title };
  }
  return { url: args.url, status: response.status, start: body.slice(0, START_LENGTH) };
}

const tools = {
  word_count: {
    description: 'Counts the words in a text, and how many of them are different',
    parameters: wordCountSchema,
    call: wordCount,
  },
  page_title: {
    description:
      'Fetches a web page and returns its HTTP status and <title> (or the start of the body when it has none)',
    parameters: pageTitleSchema,
    call: pageTitle,
  },
};

export const toolProvider = {
  listTools() {
    return Object.entries(tools).map(([name, tool]) => ({
      name,
      description: tool.description,
      parameters: JSON.stringify(tool.parameters),
      flags: { neverParallel: false, readOnly: true, pathArgument: undefined },
    }));
  },

  // Returns the result as JSON text; a thrown ToolError becomes the call's
  // error. Async, so a tool's `call` may await (fetch); a sync one works too.
  async callTool(name, argumentsJson, context) {
    const tool = tools[name];
    if (tool === undefined) {
      throw invalid(`no tool ${name}; this plugin has ${Object.keys(tools).join(', ')}`);
    }
    let args;
    try {
      args = argumentsJson.trim() === '' ? {} : JSON.parse(argumentsJson);
    } catch (error) {
      throw invalid(`arguments are not valid JSON: ${error.message}`);
    }
    if (args === null) {
      args = {};
    }
    if (typeof args !== 'object' || Array.isArray(args)) {
      throw invalid('arguments must be a JSON object');
    }
    log('debug', `${name} called (call ${context.callId})`);
    return JSON.stringify(await tool.call(args));
  },
};
