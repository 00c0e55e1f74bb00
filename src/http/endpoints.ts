/** Where each endpoint and page is: every path is spelled here once. */

/** The account page, and the sign-in that leads back to it. */
export const ACCOUNT_PATH = '/account';
export const ACCOUNT_SIGN_IN = `/login?return_to=${encodeURIComponent(ACCOUNT_PATH)}`;
