/*
 * JSON read and written without changing a number.
 *
 * JavaScript's numbers hold integers exactly only up to 2^53 (9,007,199,254,740,991); past it
 * `JSON.parse` rounds them, where Python, which the desk runs on, keeps every digit. An
 * argument such as `{"account": 12345678901234567890}` would be shown as another number, and
 * an edit would send that other number back. A float fares no better: `1.0` reads as the
 * number 1 and goes back as the integer `1` (the tool gets an int, the arguments' digest
 * changes), `-0.0` as `0`, `1e+16` as `10000000000000000`. So the page reads the desk's JSON
 * with `parseJson`, which keeps every number whose text JavaScript would not write back the
 * same as an `Exact` (its text), and writes JSON with `stringify`, which writes an `Exact`
 * back as it came.
 */

var DIGITS = /^-?(0|[1-9][0-9]*)$/;
var NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
var TOKEN = /\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([{}[\]:,]))/y;

// A number JavaScript would not write back as it came (an integer past 2^53, `1.0`, `-0.0`,
// `1e+16`), kept as its JSON text. Arithmetic and comparisons see it as the nearest number.
export function Exact(literal) {
  if (typeof literal !== 'string' || !NUMBER.test(literal)) throw new Error('not a JSON number: ' + literal);
  this.text = literal;
  Object.freeze(this);
}

Exact.prototype.valueOf = function () {
  return Number(this.text);
};

export function isExact(value) {
  return value instanceof Exact;
}

// Whether `value` is a number with no fraction: a number, or an Exact such as `1.0` or a
// long integer (JSON Schema's "integer" takes both).
export function isWhole(value) {
  return (typeof value === 'number' || isExact(value)) && Number.isInteger(Number(value));
}

// `value` as a number when it is one (an Exact as the nearest number), else null: how the
// page reads a schema's bounds, `minimum: 0.0` as much as `minimum: 0`.
export function numeric(value) {
  if (isExact(value)) return Number(value.text);
  return typeof value === 'number' ? value : null;
}

// The number written as `literal`: a number, or an Exact when a number would be written back
// otherwise (rounded, its fraction or sign or exponent lost).
function numberOf(literal) {
  var number = Number(literal);
  return JSON.stringify(number) === literal ? number : new Exact(literal);
}

// What a person typed in a number field: a number, an Exact for an integer a number would
// round (leading zeros dropped) or for JSON a number would write otherwise (`2.0` stays a
// float), or NaN when it is no number.
export function numberFrom(typed) {
  var trimmed = String(typed).trim();
  if (trimmed === '') return NaN;
  if (/^[-+]?[0-9]+$/.test(trimmed)) {
    var number = Number(trimmed);
    return Number.isSafeInteger(number) ? number : new Exact(BigInt(trimmed).toString());
  }
  return NUMBER.test(trimmed) ? numberOf(trimmed) : Number(trimmed);
}

// The value of `source`, JSON text, with every number a number would not write back as it
// came an Exact.
// Text that is not JSON throws the browser's own SyntaxError.
export function parseJson(source) {
  JSON.parse(source);
  return build(source);
}

function put(containers, value, root) {
  var top = containers[containers.length - 1];
  if (!top) {
    root.value = value;
  } else if (Array.isArray(top.value)) {
    top.value.push(value);
  } else if (top.key === '__proto__') {
    // As JSON.parse does: a key, not the object's prototype.
    Object.defineProperty(top.value, top.key, { value: value, enumerable: true, writable: true, configurable: true });
  } else {
    top.value[top.key] = value;
  }
}

// Valid JSON (JSON.parse read it first), read again token by token, with no recursion.
function build(source) {
  var containers = [];
  var root = {};
  var expectKey = false;
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < source.length) {
    var match = TOKEN.exec(source);
    if (match === null) break;  // nothing but white space is left
    var mark = match[4];
    var top = containers[containers.length - 1];
    if (mark === '{' || mark === '[') {
      var opened = mark === '{' ? {} : [];
      put(containers, opened, root);
      containers.push({ value: opened, key: null });
      expectKey = mark === '{';
    } else if (mark === '}' || mark === ']') {
      containers.pop();
      expectKey = false;
    } else if (mark === ',') {
      expectKey = !Array.isArray(top.value);
    } else if (mark === ':') {
      expectKey = false;
    } else if (match[1] !== undefined && expectKey) {
      top.key = JSON.parse(match[1]);
    } else if (match[1] !== undefined) {
      put(containers, JSON.parse(match[1]), root);
    } else if (match[2] !== undefined) {
      var literal = match[2];
      put(containers, numberOf(literal), root);
    } else {
      put(containers, { true: true, false: false, null: null }[match[3]], root);
    }
  }
  return root.value;
}

// `value` as JSON, as JSON.stringify(value, null, indent) writes it, an Exact as its digits.
export function stringify(value, indent) {
  var step = typeof indent === 'number' ? ' '.repeat(indent) : indent || '';
  return write(value, step, '');
}

function write(value, step, inset) {
  if (value instanceof Exact) return value.text;
  if (value !== null && typeof value === 'object' && typeof value.toJSON === 'function') value = value.toJSON();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  var inner = inset + step;
  var open = step ? '\n' + inner : '';
  var close = step ? '\n' + inset : '';
  var comma = step ? ',\n' + inner : ',';
  var parts;
  if (Array.isArray(value)) {
    parts = value.map(function (item) {
      var written = write(item, step, inner);
      return written === undefined ? 'null' : written;
    });
    return parts.length ? '[' + open + parts.join(comma) + close + ']' : '[]';
  }
  parts = [];
  Object.keys(value).forEach(function (key) {
    var written = write(value[key], step, inner);
    if (written !== undefined) parts.push(JSON.stringify(key) + (step ? ': ' : ':') + written);
  });
  return parts.length ? '{' + open + parts.join(comma) + close + '}' : '{}';
}

// An integer's digits grouped as the person's locale writes numbers ("12,345,678,901,...");
// any other Exact (`1.0`, `1e+16`) as it came, which is what the tool gets.
export function exactText(value) {
  return DIGITS.test(value.text) && value.text !== '-0' ? BigInt(value.text).toLocaleString() : value.text;
}
