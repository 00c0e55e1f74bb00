/** Usernames are matched case-insensitively: stored and looked up in this form. */
export function normalizeUsername(username: string): string {
  return username.trim().normalize('NFC').toLowerCase();
}
