{#
  Data test on a suppression_audit model (sdc.suppression.warehouse): fails with every sensitive cell
  whose feasible interval, given all published cells and the table's relations, does not cover its
  protection interval.
#}
{% test sdc_suppression_audit(model) %}
select * from {{ model }} where not protected
{% endtest %}
