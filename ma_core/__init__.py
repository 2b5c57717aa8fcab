"""What every stage of the SDK shares and nothing starts: the exception tree (``errors``), the expression
language (``expr``), the trace format's names (``trace_format``), the rule for cumulative hit rates
(``hitrates``), the launchers' rank variables (``launchers``) and the one way to run another program to its
end (``programs``). Importing it installs no hook, loads no library and never imports ``ma``, ``ma_runtime``
or MPI: the annotation API (``ma``), the runtime, the analysis and the backends all stand on it."""
