"""Studies on validated models (MA paper sections 4.1-4.3): parameter sweeps, scaling, elasticities and
refinement of assertions from several runs. Each module loads numpy/sympy itself; import what you use:

    from ma_post.studies.sweep import sweep
    from ma_post.studies.sensitivity import elasticities, scale_factors
    from ma_post.studies.scaling import scaling
    from ma_post.studies.refine import refine
"""
