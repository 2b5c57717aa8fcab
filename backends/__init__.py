"""Machine backends: predict a program's run time from its symbolic model and a machine profile.

Every backend subclasses :class:`backends.base.Backend` and is registered through the entry-point group
``ma.backends`` (the project's own exactly like a third party's); :mod:`backends.registry` finds them. The
machine side is the :class:`backends.machine.profile.MachineProfile`, measured by ``ma machine probe``.
Importing this package loads nothing heavy.
"""
