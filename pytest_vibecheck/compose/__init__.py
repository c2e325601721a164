"""The composition root: the built-ins (:mod:`.builtins`), building the registry from them,
the entry-point plugins, conftests and team instruction folders (:mod:`.build`), and a pytest
session's registry (:mod:`.session`). Only the top layers (``plugin``, ``ci``, ``cli``) and the
package itself use it; lower layers are handed a registry or read the active one."""
