// Passkey ceremonies for the sign-in, sign-up and account pages, over @simplewebauthn/browser
// (loaded before this as /assets/webauthn.js). The server gives the options and keeps the
// challenge; this script only carries the browser's answer back in a form post, so every
// outcome, good or bad, is a page the server renders.
'use strict';
(function () {
  var lib = window.SimpleWebAuthnBrowser;
  var errorBox = document.getElementById('passkey-error');
  // The words come from the page, in its language (ui/pages.ts passkeyScripts).
  var words = (document.getElementById('passkey-messages') || { dataset: {} }).dataset;

  function showError(message) {
    if (!errorBox) return;
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function csrf(form) {
    return form.querySelector('input[name="csrf_token"]').value;
  }

  function options(path, form) {
    return fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf_token: csrf(form) }).toString(),
    }).then(function (response) {
      // 429: too many ceremonies started from this address (http/browser-kit.ts); the
      // person is told to wait, not that their browser failed.
      if (response.status === 429) {
        var tooMany = new Error('options 429');
        tooMany.name = 'TooManyCeremonies';
        throw tooMany;
      }
      if (!response.ok) throw new Error('options ' + response.status);
      return response.json();
    });
  }

  function submitWith(form, response) {
    form.querySelector('input[name="response"]').value = JSON.stringify(response);
    form.submit();
  }

  function explain(error) {
    if (error && error.name === 'NotAllowedError') return words.cancelled;
    if (error && error.name === 'InvalidStateError') return words.exists;
    if (error && error.name === 'TooManyCeremonies') return words.tooMany;
    return words.failed;
  }

  // A form that makes an account: sign-up, or an invitation's page.
  var signUpForm = document.getElementById('new-account-form');
  var signUpPasskey = document.getElementById('new-account-passkey');

  if (!lib || !lib.browserSupportsWebAuthn()) {
    // Sign-up keeps its passkey part hidden: the password form is all this browser is offered.
    if (signUpPasskey) return;
    var unsupported = document.getElementById('passkey-button') || document.getElementById('passkey-register-button');
    if (unsupported) unsupported.disabled = true;
    showError(words.unsupported);
    return;
  }

  var signInForm = document.getElementById('passkey-form');
  if (signInForm) {
    var signIn = function (autofill) {
      return options(signInForm.dataset.options, signInForm)
        .then(function (optionsJSON) {
          return lib.startAuthentication({ optionsJSON: optionsJSON, useBrowserAutofill: autofill });
        })
        .then(function (response) {
          submitWith(signInForm, response);
        });
    };
    document.getElementById('passkey-button').addEventListener('click', function () {
      if (errorBox) errorBox.hidden = true;
      signIn(false).catch(function (error) {
        showError(explain(error));
      });
    });
    // Conditional mediation: the passkeys appear among the username field's suggestions.
    // Starting the button's ceremony aborts this one, so its failure is not shown.
    lib.browserSupportsWebAuthnAutofill().then(function (supported) {
      if (supported && document.querySelector('input[autocomplete~="webauthn"]')) signIn(true).catch(function () {});
    });
  }

  // Making an account: the passkey first, the password as the alternative. The form's
  // data-fields (those typed so far, and an invitation's token) go with the options request,
  // which refuses them as the form would (the words in its JSON).
  if (signUpForm && signUpPasskey) {
    signUpPasskey.hidden = false;
    var passwordButton = document.getElementById('password-new-account-button');
    if (passwordButton) passwordButton.classList.remove('primary');
    document.getElementById('passkey-sign-up-button').addEventListener('click', function () {
      if (errorBox) errorBox.hidden = true;
      var fields = signUpForm.dataset.fields.split(' ').map(function (name) {
        return signUpForm.elements.namedItem(name);
      });
      if (
        !fields.every(function (field) {
          return field.reportValidity();
        })
      )
        return;
      var body = new URLSearchParams({ csrf_token: csrf(signUpForm) });
      fields.forEach(function (field) {
        body.append(field.name, field.value);
      });
      fetch(signUpForm.dataset.options, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: body.toString(),
      })
        .then(function (response) {
          return response.json().then(function (value) {
            if (response.ok) return value;
            var refused = new Error(value.error || words.failed);
            refused.name = 'SignUpRefused';
            refused.field = value.field;
            throw refused;
          });
        })
        .then(function (optionsJSON) {
          signUpForm.querySelector('input[name="passkey_user"]').value = optionsJSON.user.id;
          return lib.startRegistration({ optionsJSON: optionsJSON });
        })
        .then(function (response) {
          submitWith(signUpForm, response);
        })
        .catch(function (error) {
          if (error && error.name === 'SignUpRefused') {
            showError(error.message);
            var field = error.field && document.getElementById(error.field);
            if (field) field.focus();
            return;
          }
          showError(explain(error));
        });
    });
  }

  var registerForm = document.getElementById('passkey-register-form');
  if (registerForm) {
    document.getElementById('passkey-register-button').addEventListener('click', function () {
      if (errorBox) errorBox.hidden = true;
      options(registerForm.dataset.options, registerForm)
        .then(function (optionsJSON) {
          return lib.startRegistration({ optionsJSON: optionsJSON });
        })
        .then(function (response) {
          submitWith(registerForm, response);
        })
        .catch(function (error) {
          showError(explain(error));
        });
    });
  }
})();
