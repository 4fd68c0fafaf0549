"""xetile_dsl.lowering"""
