/*
 * One card per open question, in the shape its kind calls for: one click for a single
 * choice, a short form for free text, several choices, a list of questions, a yes/no
 * confirmation, or any other tool's arguments. Every card can also be declined. An
 * approval (a tool held for a person's decision) has a card of its own (approval.js).
 *
 * A card answers through the `send(ctx, verb, body)` it is given: the page posts the
 * body and removes the card once the desk has settled the request.
 */

import { renderApproval } from './approval.js';
import { buildForm, check, drawable } from './schemaform.js';
import { el, isObject, shownText, text, when } from './dom.js';
import { parseJson, stringify } from './exact.js';
import { argumentsView } from './readable.js';

// A touch screen has no Ctrl key to speak of: its placeholder says nothing of one.
var TOUCH = typeof window.matchMedia === 'function' && window.matchMedia('(pointer: coarse)').matches;

export function summary(view) {
  var args = isObject(view.arguments) ? view.arguments : {};
  var line = '';
  if (view.kind === 'question') line = text(args.question);
  else if (view.kind === 'confirm') line = text(args.action);
  else if (view.kind === 'questions' && Array.isArray(args.questions) && args.questions.length) {
    line = text(isObject(args.questions[0]) ? args.questions[0].question : args.questions[0]);
  }
  if (!line) line = text(view.tool_name);
  return line.length > 80 ? line.slice(0, 79) + '…' : line;
}

// `page` gives what an approval card needs: `me` (who is signed in) and `history(id)`.
export function renderCard(view, send, page) {
  var args = isObject(view.arguments) ? view.arguments : {};
  var kind = view.kind;
  var card = el('article', {
    className: 'card',
    attrs: { 'data-request-id': view.id, 'data-kind': text(kind) }
  });
  var meta = [text(view.tool_name), 'room ' + text(view.room_id), when(view.created_at)];
  card.appendChild(el('p', { className: 'card-meta', text: meta.filter(Boolean).join(' · ') }));
  // "Alice is away until 12 Dec; Carol is deciding": who decides while someone is away.
  if (typeof view.routing === 'string' && view.routing) {
    card.appendChild(el('p', { className: 'card-routing', attrs: { role: 'status' }, text: view.routing + '.' }));
  }
  var error = el('p', { className: 'error', attrs: { role: 'alert' } });
  error.hidden = true;
  var ctx = { view: view, card: card, error: error };
  ctx.send = function (verb, body) {
    send(ctx, verb, body);
  };
  if (kind === 'approval') {
    renderApproval(ctx, args, page);
    card.insertBefore(error, card.querySelector('.history'));
    return card;
  }
  if (kind === 'question') renderQuestion(ctx, args);
  else if (kind === 'questions') renderQuestions(ctx, args);
  else if (kind === 'confirm') renderConfirm(ctx, args);
  else renderCustom(ctx, args);
  if (isObject(view.answer_schema)) {
    card.appendChild(el('details', { className: 'schema' }, [
      el('summary', { text: 'Answer format' }),
      el('pre', { text: stringify(view.answer_schema, 2) })
    ]));
  }
  card.appendChild(error);
  card.appendChild(renderDecline(ctx));
  return card;
}

function options(list) {
  return Array.isArray(list) ? list.map(text) : [];
}

function renderQuestion(ctx, args) {
  ctx.card.appendChild(el('p', { className: 'question-text', text: text(args.question) }));
  var choices = options(args.options);
  if (!choices.length) {
    freeText(ctx, function (value) {
      return { answer: value };
    });
  } else if (args.multiSelect === true) {
    var form = el('form', { className: 'answer' });
    var group = el('fieldset', { className: 'choices' }, [
      el('legend', { className: 'visually-hidden', text: 'Pick any' })
    ]);
    choices.forEach(function (choice) {
      group.appendChild(choiceInput('checkbox', 'pick', choice, ''));
    });
    form.appendChild(group);
    form.appendChild(el('button', { className: 'primary', text: 'Answer', attrs: { type: 'submit' } }));
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var picked = checked(group);
      if (!picked.length) {
        fail(ctx, 'Pick at least one, or decline the question below.');
        return;
      }
      ctx.send('answer', { answer: picked });
    });
    ctx.card.appendChild(form);
  } else {
    var row = el('div', { className: 'choice-buttons' });
    choices.forEach(function (choice) {
      var button = el('button', { className: 'choice', text: choice, attrs: { type: 'button' } });
      button.addEventListener('click', function () {
        ctx.send('answer', { answer: choice });
      });
      row.appendChild(button);
    });
    ctx.card.appendChild(row);
  }
}

function choiceInput(type, name, label, description) {
  var input = el('input', { attrs: { type: type, name: name } });
  input.value = label;
  var parts = [input, el('span', { className: 'choice-label', text: label })];
  if (description) parts.push(el('span', { className: 'choice-description', text: description }));
  return el('label', { className: 'choice-option' }, parts);
}

function checked(group) {
  return Array.from(group.querySelectorAll('input:checked')).map(function (input) {
    return input.value;
  });
}

function freeText(ctx, toBody) {
  var form = el('form', { className: 'answer' });
  var area = el('textarea', {
    attrs: { rows: '3', maxlength: '10000', 'aria-label': 'Your answer', placeholder: TOUCH ? 'Your answer' : 'Ctrl+Enter sends' }
  });
  area.addEventListener('keydown', function (event) {
    // Enter starts a new line; Ctrl+Enter (Cmd+Enter on a Mac) sends, as in chat apps.
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.appendChild(area);
  form.appendChild(el('button', { className: 'primary', text: 'Answer', attrs: { type: 'submit' } }));
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (!area.value.trim()) {
      fail(ctx, 'Write an answer first.');
      return;
    }
    var body = toBody(area.value);
    if (body) ctx.send('answer', body);
  });
  ctx.card.appendChild(form);
}

function renderQuestions(ctx, args) {
  var questions = Array.isArray(args.questions) ? args.questions.filter(isObject) : [];
  var form = el('form', { className: 'answer' });
  var groups = questions.map(function (question, index) {
    var multi = question.multiSelect === true;
    var group = el('fieldset', { className: 'choices' });
    var legend = el('legend', {});
    if (question.header) legend.appendChild(el('span', { className: 'chip', text: text(question.header) }));
    legend.appendChild(el('span', { className: 'question-text', text: text(question.question) }));
    group.appendChild(legend);
    var list = Array.isArray(question.options) ? question.options : [];
    var field = null;
    if (list.length) {
      list.forEach(function (option) {
        var label = isObject(option) ? text(option.label) : text(option);
        var description = isObject(option) ? text(option.description) : '';
        group.appendChild(choiceInput(multi ? 'checkbox' : 'radio', 'q' + index, label, description));
      });
    } else {
      field = el('input', { attrs: { type: 'text', 'aria-label': 'Answer' } });
      group.appendChild(field);
    }
    form.appendChild(group);
    return { question: question, multi: multi, group: group, field: field };
  });
  form.appendChild(el('button', { className: 'primary', text: 'Answer', attrs: { type: 'submit' } }));
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var answers = [];
    for (var i = 0; i < groups.length; i += 1) {
      var item = groups[i];
      var picked = item.field ? [item.field.value.trim()].filter(Boolean) : checked(item.group);
      if (!item.multi && !picked.length) {
        fail(ctx, 'Answer: ' + text(item.question.question));
        return;
      }
      answers.push({
        question: text(item.question.question),
        answer: item.multi ? picked : picked[0]
      });
    }
    ctx.send('answer', { answers: answers });
  });
  ctx.card.appendChild(form);
}

function renderConfirm(ctx, args) {
  ctx.card.appendChild(el('p', { className: 'question-text', text: text(args.action) }));
  var details = args.details;
  if (isObject(details)) {
    var list = el('dl', { className: 'details' });
    Object.keys(details).forEach(function (key) {
      list.appendChild(el('dt', { text: key }));
      list.appendChild(el('dd', { text: text(details[key]) }));
    });
    ctx.card.appendChild(list);
  } else if (details !== undefined && details !== null) {
    ctx.card.appendChild(el('p', { className: 'details', text: text(details) }));
  }
  var reason = el('input', {
    attrs: { type: 'text', maxlength: '1000', placeholder: 'Reason (optional, sent with No)', 'aria-label': 'Reason' }
  });
  var yes = el('button', { className: 'primary', text: 'Yes', attrs: { type: 'button' } });
  var no = el('button', { className: 'danger', text: 'No', attrs: { type: 'button' } });
  yes.addEventListener('click', function () {
    ctx.send('answer', { confirmed: true });
  });
  no.addEventListener('click', function () {
    var body = { confirmed: false };
    if (reason.value.trim()) body.reason = reason.value.trim();
    ctx.send('answer', body);
  });
  ctx.card.appendChild(el('div', { className: 'confirm-row' }, [yes, no, reason]));
}

function renderCustom(ctx, args) {
  ctx.card.appendChild(el('p', { className: 'question-text', text: 'The agent asks through ' + text(ctx.view.tool_name) + ':' }));
  ctx.card.appendChild(argumentsView(args, {}, null));
  var schema = isObject(ctx.view.answer_schema) ? ctx.view.answer_schema : null;
  var wantsJson = schema !== null && schema.type !== 'string';
  if (wantsJson && answerForm(ctx, schema)) return;
  freeText(ctx, function (value) {
    if (!wantsJson) return { answer: value };
    try {
      return { answer: parseJson(value) };
    } catch (err) {
      fail(ctx, 'Write the answer as JSON (see the answer format).');
      return null;
    }
  });
}

// The answer as a form built from its schema: an object's fields, or one field for a single
// value (a number, a choice, a yes/no, a list). False when the form cannot draw the schema:
// the answer is then written as JSON.
function answerForm(ctx, schema) {
  var whole = schema.type === 'object' && isObject(schema.properties);
  var single = Object.assign({}, schema, { title: typeof schema.title === 'string' ? schema.title : 'Your answer' });
  var shape = whole ? schema : { type: 'object', properties: { answer: single }, required: ['answer'] };
  if (!drawable(shape, true)) return false;
  var built = buildForm(shape, {});
  var form = el('form', { className: 'answer schema-answer', attrs: { novalidate: '' } }, [
    built.node,
    el('button', { className: 'primary', text: 'Answer', attrs: { type: 'submit' } })
  ]);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var read = built.read();
    var value = read.value === undefined ? undefined : whole ? read.value : read.value.answer;
    var problems = read.problems || (value === undefined ? ['give an answer first'] : check(schema, value, whole ? '' : 'the answer', []));
    if (problems.length) {
      fail(ctx, 'Fix the answer first: ' + problems.join('; ') + '.');
      return;
    }
    ctx.send('answer', { answer: value });
  });
  ctx.card.appendChild(form);
  return true;
}

function renderDecline(ctx) {
  var reason = el('input', {
    attrs: { type: 'text', maxlength: '1000', placeholder: 'Why (optional)', 'aria-label': 'Why you decline' }
  });
  var button = el('button', { className: 'danger', text: 'Decline', attrs: { type: 'button' } });
  button.addEventListener('click', function () {
    ctx.send('reject', { reason: reason.value.trim() });
  });
  return el('details', { className: 'decline' }, [
    el('summary', { text: 'Decline to answer…' }),
    el('div', { className: 'row' }, [reason, button])
  ]);
}

export function fail(ctx, message) {
  ctx.error.textContent = shownText(message);
  ctx.error.hidden = false;
}

export function busy(ctx, on) {
  ctx.card.classList.toggle('busy', on);
  ctx.card.querySelectorAll('button, input, textarea').forEach(function (control) {
    control.disabled = on;
  });
}
