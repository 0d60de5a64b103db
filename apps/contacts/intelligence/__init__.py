"""Pure contact-intelligence logic: mood, crisis language, helplines, relationship stages, adaptation hints
and history patterns (contact-intelligence.txt §4-5, chat-engine-memory.txt §3.3-3.4).

No ORM imports anywhere in this package: services feed it plain values and persist what it returns.
"""
