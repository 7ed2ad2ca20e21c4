/*
 * A tool's arguments as a form built from its JSON Schema, and the page's own check of them.
 *
 * The form draws objects, strings (a date picker for a date), numbers and integers (with
 * their bounds and unit), booleans, enums of scalars and arrays of scalars (one item per line);
 * the desk's question cards use it for an answer schema too. For a schema it cannot draw
 * (oneOf, $ref, objects without properties, arrays of objects...) there is a JSON editor,
 * which is also one click away on any form. Both are checked here, for what a person can
 * fix at once (required, types, bounds, enums, lengths); the desk checks the edit again
 * against the whole schema and says what it refuses. An integer past 2^53 is kept as its
 * digits (exact.js): left as shown it goes back as it came, typed it goes as typed. So does
 * text holding a character that steers how it reads (a bidi override, a control character):
 * the field shows each one marked, `⟨U+202E⟩`, with a warning beside it; left as shown the
 * value goes back with its characters, typed it goes as typed, marks and all.
 */

import { el, isObject, markedText, text } from './dom.js';
import { isExact, isWhole, numberFrom, numeric, stringify } from './exact.js';

var SCALARS = ['string', 'number', 'integer', 'boolean'];
var fieldIds = 0;
var STEERING_WARNING = 'This value holds invisible direction or control characters, shown ' +
  'here as ⟨U+…⟩. Left as it is, it is sent as it came; changed, it is sent as you typed it.';

function typeOf(schema) {
  if (!isObject(schema)) return null;
  if (Array.isArray(schema.enum)) return 'enum';
  return typeof schema.type === 'string' ? schema.type : null;
}

function isScalar(value) {
  return value === null || isExact(value) || ['string', 'number', 'boolean'].indexOf(typeof value) >= 0;
}

// Whether the form can draw `schema` (the top one must be an object with properties).
export function drawable(schema, top) {
  var type = typeOf(schema);
  if (isObject(schema) && (schema.oneOf || schema.anyOf || schema.allOf || schema.$ref)) return false;
  if (type === 'enum') return schema.enum.length > 0 && schema.enum.every(isScalar);
  if (type === 'object') {
    if (!isObject(schema.properties)) return false;
    return Object.keys(schema.properties).every(function (name) {
      return drawable(schema.properties[name], false);
    });
  }
  if (top) return false;
  if (type === 'array') {
    var items = schema.items;
    return SCALARS.indexOf(typeOf(items)) >= 0 || (typeOf(items) === 'enum' && drawable(items, false));
  }
  return SCALARS.indexOf(type) >= 0;
}

// -- the check -------------------------------------------------------------------------------

function where(path) {
  return path || 'the arguments';
}

function matchesType(type, value) {
  if (type === 'object') return isObject(value);
  if (type === 'array') return Array.isArray(value);
  if (type === 'string') return typeof value === 'string';
  if (type === 'boolean') return typeof value === 'boolean';
  if (type === 'integer') return isWhole(value);
  if (type === 'number') return isExact(value) || (typeof value === 'number' && isFinite(value));
  if (type === 'null') return value === null;
  return true;
}

function bounds(schema, exactOrNumber, path, problems) {
  var name = where(path);
  // An Exact (a long integer, `1.0`) is compared as the nearest number: the desk checks it
  // exactly. So are the schema's bounds (`minimum: 0.0` reads as an Exact too).
  var value = numeric(exactOrNumber);
  var minimum = numeric(schema.minimum);
  var maximum = numeric(schema.maximum);
  var above = numeric(schema.exclusiveMinimum);
  var below = numeric(schema.exclusiveMaximum);
  if (minimum !== null && value < minimum) problems.push(name + ' must be at least ' + minimum);
  if (maximum !== null && value > maximum) problems.push(name + ' must be at most ' + maximum);
  if (above !== null && value <= above) problems.push(name + ' must be more than ' + above);
  if (below !== null && value >= below) problems.push(name + ' must be less than ' + below);
}

function lengths(schema, count, path, problems, unit) {
  var low = numeric(unit === 'items' ? schema.minItems : schema.minLength);
  var high = numeric(unit === 'items' ? schema.maxItems : schema.maxLength);
  if (low !== null && count < low) problems.push(where(path) + ' takes at least ' + low + ' ' + unit);
  if (high !== null && count > high) problems.push(where(path) + ' takes at most ' + high + ' ' + unit);
}

// What is wrong with `value` for `schema`, as sentences a person can act on.
export function check(schema, value, path, problems) {
  problems = problems || [];
  path = path || '';
  if (!isObject(schema)) return problems;
  if (Array.isArray(schema.enum)) {
    var wanted = schema.enum.map(function (item) { return stringify(item); });
    if (wanted.indexOf(stringify(value)) < 0) {
      problems.push(where(path) + ' must be one of ' + wanted.join(', '));
    }
    return problems;
  }
  var types = Array.isArray(schema.type) ? schema.type : (typeof schema.type === 'string' ? [schema.type] : []);
  if (types.length && !types.some(function (type) { return matchesType(type, value); })) {
    problems.push(where(path) + ' must be ' + types.map(article).join(' or '));
    return problems;
  }
  if (typeof value === 'number' || isExact(value)) bounds(schema, value, path, problems);
  if (typeof value === 'string') lengths(schema, Array.from(value).length, path, problems, 'characters');
  if (Array.isArray(value)) {
    lengths(schema, value.length, path, problems, 'items');
    if (isObject(schema.items)) {
      value.forEach(function (item, index) {
        check(schema.items, item, (path || 'item') + '[' + index + ']', problems);
      });
    }
  }
  if (isObject(value)) {
    var properties = isObject(schema.properties) ? schema.properties : {};
    (Array.isArray(schema.required) ? schema.required : []).forEach(function (name) {
      if (!Object.prototype.hasOwnProperty.call(value, name)) problems.push(join(path, name) + ' is required');
    });
    Object.keys(value).forEach(function (name) {
      if (isObject(properties[name])) check(properties[name], value[name], join(path, name), problems);
    });
  }
  return problems;
}

function article(type) {
  return { integer: 'a whole number', number: 'a number', string: 'text', boolean: 'true or false',
    object: 'an object', array: 'a list', null: 'null' }[type] || text(type);
}

function join(path, name) {
  return path ? path + '.' + name : name;
}

// -- the form --------------------------------------------------------------------------------

// The form for `schema` filled with `value`: { node, read() } where read() gives
// { value } (empty fields left out) or { problems } (what stops a field from being read).
export function buildForm(schema, value) {
  return objectField(schema, isObject(value) ? value : {}, '');
}

function labelled(name, schema, control, hint, marked) {
  var parts = [el('span', { className: 'field-name', text: titleOf(name, schema) }), control];
  var description = isObject(schema) && typeof schema.description === 'string' ? schema.description : '';
  if (description || hint) {
    parts.push(el('span', { className: 'field-hint', text: [description, hint].filter(Boolean).join(' · ') }));
  }
  if (marked) parts.push(el('span', { className: 'field-warning', text: STEERING_WARNING }));
  return el('label', { className: 'field' }, parts);
}

function objectField(schema, value, path) {
  var properties = schema.properties;
  var fields = Object.keys(properties).map(function (name) {
    var field = fieldFor(name, properties[name], value[name], join(path, name));
    field.name = name;
    field.present = Object.prototype.hasOwnProperty.call(value, name);
    return field;
  });
  var node = el('fieldset', { className: 'object-field' }, fields.map(function (field) { return field.node; }));
  if (path) node.insertBefore(el('legend', { text: path }), node.firstChild);
  return {
    node: node,
    read: function () {
      var result = {};
      var problems = [];
      // Arguments the schema does not describe are kept as the model wrote them.
      Object.keys(value).forEach(function (name) {
        if (!Object.prototype.hasOwnProperty.call(properties, name)) result[name] = value[name];
      });
      fields.forEach(function (field) {
        var read = field.read();
        // An empty field is left out: the check says when the schema requires it.
        if (read.problems) problems = problems.concat(read.problems);
        else if (!read.empty && !(read.unchanged && !field.present)) result[field.name] = read.value;
      });
      return problems.length ? { problems: problems } : { value: result };
    }
  };
}

function fieldFor(name, schema, value, path) {
  var type = typeOf(schema);
  if (type === 'enum') return enumField(name, schema, value);
  if (type === 'object') {
    var inner = objectField(schema, isObject(value) ? value : {}, path);
    return {
      node: inner.node,
      read: function () {
        // An object the model left out stays out while none of its fields is filled in.
        var read = inner.read();
        if (read.value && !isObject(value) && !Object.keys(read.value).length) read.unchanged = true;
        return read;
      }
    };
  }
  if (type === 'boolean') return booleanField(name, schema, value);
  if (type === 'array') return arrayField(name, schema, value, path);
  if (type === 'number' || type === 'integer') return numberField(name, schema, value, path, type);
  return stringField(name, schema, value);
}

// The input a string's format calls for: a date picker for a date, an email field for an email.
var STRING_INPUTS = { date: 'date', email: 'email', uri: 'url' };

function stringField(name, schema, value) {
  var long = typeof value === 'string' && (value.length > 80 || value.indexOf('\n') >= 0);
  var shown = typeof value === 'string' ? markedText(value) : '';
  var marked = typeof value === 'string' && shown !== value;
  // A date picker or an email field would drop the marks: a marked value is edited as text.
  var type = marked ? 'text' : STRING_INPUTS[schema.format] || 'text';
  var control = long
    ? el('textarea', { attrs: { rows: '3', 'data-field': name } })
    : el('input', { attrs: { type: type, 'data-field': name } });
  control.value = shown;
  return {
    node: labelled(name, schema, control, '', marked),
    read: function () {
      if (marked && control.value === shown) return { value: value };
      return control.value === '' ? { empty: true } : { value: control.value };
    }
  };
}

function numberField(name, schema, value, path, type) {
  var attrs = { type: 'number', step: type === 'integer' ? '1' : 'any', 'data-field': name };
  var hint = [];
  var minimum = numeric(schema.minimum);
  var maximum = numeric(schema.maximum);
  if (minimum !== null) {
    attrs.min = minimum;
    hint.push('at least ' + minimum);
  }
  if (maximum !== null) {
    attrs.max = maximum;
    hint.push('at most ' + maximum);
  }
  var unit = schema['x-unit'] !== undefined ? schema['x-unit'] : schema.unit;
  if (typeof unit === 'string' && unit) hint.unshift('in ' + unit);
  var control = el('input', { attrs: attrs });
  var shown = typeof value === 'number' || isExact(value) ? stringify(value) : '';
  control.value = shown;
  return {
    node: labelled(name, schema, control, hint.join(', ')),
    read: function () {
      // A number input holding something that is not a number reads as '' and is invalid.
      if (control.value === '' && control.validity.badInput) return { problems: [path + ' must be ' + article(type)] };
      if (control.value === '') return { empty: true };
      // Left as shown, the value goes back as it came: every digit of a long integer, `1.0`.
      if (shown !== '' && control.value === shown) return { value: value };
      return { value: numberFrom(control.value) };
    }
  };
}

function titleOf(name, schema) {
  return isObject(schema) && typeof schema.title === 'string' && schema.title ? schema.title : name;
}

function booleanField(name, schema, value) {
  var control = el('input', { attrs: { type: 'checkbox', 'data-field': name } });
  control.checked = value === true;
  return {
    node: el('label', { className: 'field field-check' }, [control, el('span', { className: 'field-name', text: titleOf(name, schema) })]),
    read: function () {
      return { value: control.checked, unchanged: control.checked === (value === true) };
    }
  };
}

function enumField(name, schema, value) {
  var group = 'enum-' + (fieldIds += 1);
  var legend = el('legend', { className: 'field-name', text: titleOf(name, schema) });
  var box = el('fieldset', { className: 'field choices', attrs: { 'data-field': name } }, [legend]);
  var inputs = schema.enum.map(function (option) {
    var input = el('input', { attrs: { type: 'radio', name: group } });
    input.checked = stringify(option) === stringify(value);
    box.appendChild(el('label', { className: 'choice-option' }, [
      input, el('span', { className: 'choice-label', text: typeof option === 'string' ? option : stringify(option) })
    ]));
    return { input: input, option: option };
  });
  return {
    node: box,
    read: function () {
      var picked = inputs.filter(function (item) { return item.input.checked; });
      return picked.length ? { value: picked[0].option } : { empty: true };
    }
  };
}

function arrayField(name, schema, value, path) {
  var itemType = typeOf(schema.items);
  var control = el('textarea', { attrs: { rows: '3', 'data-field': name } });
  var written = Array.isArray(value) ? value.map(function (item) { return typeof item === 'string' ? item : stringify(item); }).join('\n') : '';
  var shown = markedText(written);
  var marked = shown !== written;
  control.value = shown;
  return {
    node: labelled(name, schema, control, 'one per line', marked),
    read: function () {
      // Left as shown, marked items go back as they came; changed, the lines go as typed.
      if (marked && control.value === shown) return { value: value };
      var lines = control.value.split('\n').filter(function (line) { return line.trim() !== ''; });
      var problems = [];
      var items = lines.map(function (line, index) {
        if (itemType === 'string' || itemType === 'enum') return itemType === 'enum' ? parseEnumItem(schema.items, line) : line;
        if (itemType === 'boolean') return line.trim() === 'true' ? true : line.trim() === 'false' ? false : line;
        var number = numberFrom(line);
        if (typeof number === 'number' && isNaN(number)) problems.push(path + '[' + index + '] must be ' + article(itemType));
        return number;
      });
      if (problems.length) return { problems: problems };
      return { value: items, unchanged: !Array.isArray(value) && !items.length };
    }
  };
}

function parseEnumItem(schema, line) {
  var found = schema.enum.filter(function (option) {
    return (typeof option === 'string' ? option : stringify(option)) === line;
  });
  return found.length ? found[0] : line;
}
