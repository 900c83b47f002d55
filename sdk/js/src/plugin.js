// A Talaria tool plugin in JavaScript: one tool, `word_count`.
//
// componentize-js turns this ES module into a component of the world
// `tool-plugin` (see wit/). The `tool-provider` interface is the exported
// object `toolProvider`; host interfaces are imported by their WIT names.

import { log } from 'talaria:plugin/log@0.1.2';

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

function wordCount(args) {
  const unknown = Object.keys(args).filter((key) => !(key in wordCountSchema.properties));
  if (unknown.length > 0) {
    throw invalid(`unknown argument(s) ${unknown.join(', ')}; word_count takes text, min_length`);
  }
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

const tools = {
  word_count: {
    description: 'Counts the words in a text, and how many of them are different',
    parameters: wordCountSchema,
    call: wordCount,
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

  // Returns the result as JSON text; a thrown ToolError becomes the call's error.
  callTool(name, argumentsJson, context) {
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
    return JSON.stringify(tool.call(args));
  },
};
